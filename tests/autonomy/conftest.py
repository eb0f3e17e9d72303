"""A real HTTP server on loopback for the tests that cancel mid-stream."""

from tests.turns.conftest import live_client

__all__ = ["live_client"]
