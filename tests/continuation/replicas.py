"""Replicas for the crash and drain tests: B lives for the whole package, each test takes a fresh A
(its own process, killed or drained by the test), and the next A starts while a test runs — a
replica takes seconds to start on a loaded machine, which would otherwise dominate every test."""

from __future__ import annotations

from collections.abc import Callable

from tests.live_server import LiveServer


class ReplicaPool:
    def __init__(self, spawn: Callable[[], LiveServer]) -> None:
        self._spawn = spawn
        self._started: list[LiveServer] = []
        self.survivor = self._start()
        self._spare = self._start()
        self.survivor.wait_ready()

    def _start(self) -> LiveServer:
        server = self._spawn()
        self._started.append(server)
        return server

    def take(self) -> LiveServer:
        """A ready replica that is this test's to kill; a spare for the next test starts at once."""
        taken, self._spare = self._spare, self._start()
        taken.wait_ready()
        return taken

    def close(self) -> None:
        for server in self._started:
            server.terminate()
        for server in self._started:
            server.stop()
