"""`Accept` negotiation: the default, weights, specificity, and 406 for what a route cannot send."""

from __future__ import annotations

import pytest

from app.core.negotiation import negotiate
from app.errors import NotAcceptable

TURN = ("text/event-stream", "application/json")


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        (None, "text/event-stream"),
        ("", "text/event-stream"),
        ("*/*", "text/event-stream"),
        ("text/event-stream", "text/event-stream"),
        ("application/json", "application/json"),
        ("application/*", "application/json"),
        ("text/*", "text/event-stream"),
        ("application/json, text/event-stream", "text/event-stream"),
        ("text/event-stream;q=0.5, application/json", "application/json"),
        ("application/json, */*;q=0.1", "application/json"),
        ("text/html, application/json;q=0.9", "application/json"),
        ("*/*, application/json;q=0", "text/event-stream"),
        ("APPLICATION/JSON", "application/json"),
    ],
)
def test_picks_the_representation_the_client_prefers(accept: str | None, chosen: str) -> None:
    assert negotiate(accept, TURN) == chosen


@pytest.mark.parametrize(
    "accept", ["text/html", "image/png, text/plain", "application/json;q=0, text/event-stream;q=0", "*/*;q=0"]
)
def test_refuses_an_accept_that_allows_none(accept: str) -> None:
    with pytest.raises(NotAcceptable) as caught:
        negotiate(accept, TURN)
    assert caught.value.status == 406
    assert "text/event-stream or application/json" in caught.value.detail


def test_a_stream_only_route_refuses_json() -> None:
    with pytest.raises(NotAcceptable):
        negotiate("application/json", ("text/event-stream",))
