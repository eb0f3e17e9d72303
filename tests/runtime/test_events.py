"""`stamp` writes each typed event as its envelope then exactly the model's own JSON."""

from __future__ import annotations

import orjson
import pytest

from app.runtime.port.events import (
    ApprovalRequired,
    ContextDegraded,
    EventBody,
    MessageDelta,
    PolicyDecisionEvent,
    ToolCallRequested,
    TurnEnded,
    TurnStarted,
    stamp,
)

EVENTS: list[EventBody] = [
    TurnStarted(session_id="s", agent_id="a", agent_version=2, resumed_by=None),
    MessageDelta(text='NULL "quoted" é✓ \n\u2028'),
    ToolCallRequested(tool_call_id="c", name="calc", arguments={"nested": [1, 2.5, {"x": None}], "t": True}),
    PolicyDecisionEvent(point="tool", tool_call_id="c", verdict="deny", rule_id="r", reason=None, policy_hash="h"),
    ApprovalRequired(approval_id="p", tool_call_id="c", name="calc", arguments={}, reason="why"),
    ContextDegraded(component="ingest", error="down"),
    TurnEnded.of("failed", final_output=None, input_tokens=1, output_tokens=2, loop_count=3,
                 error={"code": "budget_exceeded", "message": "m", "spent": {"tokens": 9}}),
    TurnEnded.of("completed", final_output="done", input_tokens=0, output_tokens=0, loop_count=1, error=None),
]  # fmt: skip


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_stamp_is_the_envelope_then_the_models_json(event: EventBody) -> None:
    text = stamp("t-1", 7, event)
    assert text == '{"turn_id":"t-1","seq":7,' + event.model_dump_json()[1:]
    assert orjson.loads(text) == {"turn_id": "t-1", "seq": 7, **event.model_dump(mode="json")}


def test_extra_error_fields_are_kept_in_turn_ended() -> None:
    ended = TurnEnded.of("failed", final_output=None, input_tokens=0, output_tokens=0, loop_count=0,
                         error={"code": "x", "message": "y", "spent": 5})  # fmt: skip
    assert orjson.loads(stamp("t", 1, ended))["error"] == {"code": "x", "message": "y", "spent": 5}
