"""The drop rule at `turn.resumed`: what a reader withdraws of what it showed."""

from __future__ import annotations

from typing import Any

from app.core.drop_rule import withdrawn


def _events(*types: str) -> list[dict[str, Any]]:
    return [{"seq": seq, "type": kind} for seq, kind in enumerate(types, start=1)]


def _resumed(last_durable_seq: int, seq: int = 257) -> dict[str, Any]:
    return {"seq": seq, "type": "turn.resumed", "last_durable_seq": last_durable_seq}


def test_events_after_the_last_durable_one_are_withdrawn() -> None:
    shown = _events("turn.started", "node.started", "node.ended", "tool_call.requested", "tool_call.completed")
    assert withdrawn(shown, _resumed(3)) == {4, 5}


def test_the_reply_still_streaming_is_withdrawn_even_where_stored() -> None:
    shown = _events("turn.started", "message.delta", "message.delta", "message.delta")
    assert withdrawn(shown, _resumed(2)) == {2, 3, 4}


def test_a_completed_reply_and_what_the_store_kept_stay() -> None:
    shown = _events("turn.started", "message.delta", "message.completed", "tool_call.requested", "message.delta")
    assert withdrawn(shown, _resumed(4)) == {5}
    assert withdrawn(shown, _resumed(5)) == {5}  # stored, but the reply it began is made again


def test_nothing_is_withdrawn_when_all_was_stored_between_replies() -> None:
    shown = _events("turn.started", "message.delta", "message.completed", "usage")
    assert withdrawn(shown, _resumed(4)) == set()
