"""The event mapping of both adapters, on a recorded turn: a gated call, its approval, the answer."""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import EventType, UserMessage

from app.adapters import ag_ui, ai_sdk

TURN = "7d1c5e0a-0000-4000-8000-000000000001"
APPROVAL = "7d1c5e0a-0000-4000-8000-0000000000aa"


def _events(*items: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"turn_id": TURN, "seq": n, "type": t, **d} for n, (t, d) in enumerate(items, start=1)]


INTERRUPTED = _events(
    ("turn.started", {"session_id": "s", "agent_id": "a", "agent_version": 1, "resumed_by": None}),
    ("node.started", {"node": "call_llm", "loop": 0}),
    ("message.delta", {"text": "Let "}),
    ("message.delta", {"text": "me check."}),
    ("message.completed", {"text": "Let me check.", "stop_reason": "tool_use"}),
    ("usage", {"input_tokens": 3, "output_tokens": 3, "kind": "model"}),
    ("node.ended", {"node": "call_llm", "loop": 0}),
    ("node.started", {"node": "execute_tools", "loop": 0}),
    ("tool_call.requested", {"tool_call_id": "c1", "name": "echo", "arguments": {"text": "hi"}}),
    ("policy.decision", {"point": "tool", "tool_call_id": "c1", "verdict": "allow", "rule_id": None, "reason": None,
                         "policy_hash": "h"}),
    ("tool_call.completed", {"tool_call_id": "c1", "name": "echo", "is_error": False, "result": "hi"}),
    ("tool_call.requested", {"tool_call_id": "c2", "name": "calculator", "arguments": {"expression": "6*7"}}),
    ("approval.required", {"approval_id": APPROVAL, "tool_call_id": "c2", "name": "calculator",
                           "arguments": {"expression": "6*7"}, "reason": "needs a human"}),
    ("turn.ended", {"status": "interrupted", "final_output": None, "usage": {"input_tokens": 3, "output_tokens": 3},
                    "loop_count": 0, "error": None}),
)  # fmt: skip
RESUMED = [
    {"turn_id": TURN, "seq": 15, "type": "turn.started", "resumed_by": APPROVAL},
    {"turn_id": TURN, "seq": 16, "type": "tool_call.completed", "tool_call_id": "c2", "name": "calculator",
     "is_error": False, "result": "42"},
    {"turn_id": TURN, "seq": 17, "type": "message.completed", "text": "It is 42.", "stop_reason": "end_turn"},
    {"turn_id": TURN, "seq": 18, "type": "turn.ended", "status": "completed", "final_output": "It is 42.",
     "usage": {"input_tokens": 5, "output_tokens": 5}, "loop_count": 1, "error": None},
]  # fmt: skip


def _ag_ui(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    run = ag_ui.AgUiRun(thread_id="thread", run_id="run")
    out = [*run.started()]
    for event in events:
        out.extend(run.translate(event))
    return [json.loads(ag_ui.encode(e).removeprefix(b"data: ")) for e in out]


def _ai_sdk(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    run = ai_sdk.AiSdkRun(message_id=TURN)
    out = [*run.started()]
    for event in events:
        out.extend(run.translate(event))
    return out


def test_ag_ui_maps_an_interrupted_run() -> None:
    out = _ag_ui(INTERRUPTED)
    assert [e["type"] for e in out] == [
        "RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "STEP_FINISHED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "CUSTOM", "TOOL_CALL_RESULT", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "CUSTOM",
        "STEP_FINISHED", "RUN_FINISHED",
    ]  # fmt: skip
    assert out[0] == {"type": "RUN_STARTED", "threadId": "thread", "runId": "run"}
    assert out[1]["stepName"] == "call_llm"
    assert "".join(e["delta"] for e in out if e["type"] == "TEXT_MESSAGE_CONTENT") == "Let me check."
    assert json.loads(out[9]["delta"]) == {"text": "hi"}
    assert out[11]["name"] == "policy.decision"
    assert out[12]["toolCallId"] == "c1"
    assert out[12]["content"] == "hi"
    assert out[16]["name"] == "approval.required"
    assert out[16]["value"]["approval_id"] == APPROVAL
    assert out[17] == {"type": "STEP_FINISHED", "stepName": "execute_tools"}  # closed before the run ends
    outcome = out[18]["outcome"]
    assert outcome["type"] == "interrupt"
    assert outcome["interrupts"] == [{"id": APPROVAL, "reason": "approval_required", "message": "needs a human",
                                      "toolCallId": "c2"}]  # fmt: skip


def test_ag_ui_maps_the_resumed_run_and_its_answer() -> None:
    out = _ag_ui(RESUMED)
    assert [e["type"] for e in out] == [
        "RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]  # fmt: skip
    assert out[3]["delta"] == "It is 42."
    assert out[-1]["result"] == "It is 42."
    assert "outcome" not in out[-1]


def test_ag_ui_errors_and_cancellations() -> None:
    failed = _ag_ui([{"turn_id": TURN, "seq": 1, "type": "turn.ended", "status": "failed",
                      "error": {"code": "provider_error", "message": "upstream said no"}}])  # fmt: skip
    assert failed[-1] == {"type": EventType.RUN_ERROR.value, "message": "upstream said no", "code": "provider_error"}
    limited = _ag_ui([{"turn_id": TURN, "seq": 1, "type": "turn.ended", "status": "loop_limit", "error": None}])
    assert limited[-1]["type"] == "RUN_ERROR"
    assert limited[-1]["code"] == "loop_limit"
    cancelled = _ag_ui([{"turn_id": TURN, "seq": 1, "type": "turn.ended", "status": "cancelled", "error": None}])
    assert cancelled[-1]["outcome"] == {"type": "cancelled"}


def test_ai_sdk_maps_an_interrupted_run_then_the_resumed_one() -> None:
    first = _ai_sdk(INTERRUPTED)
    assert [c["type"] for c in first] == [
        "start", "text-start", "text-delta", "text-delta", "text-end", "tool-input-available",
        "data-policy-decision", "tool-output-available", "tool-input-available", "data-approval", "finish",
    ]  # fmt: skip
    assert first[0] == {"type": "start", "messageId": TURN}
    assert first[5] == {"type": "tool-input-available", "toolCallId": "c1", "toolName": "echo", "input": {"text": "hi"}}
    assert first[7] == {"type": "tool-output-available", "toolCallId": "c1", "output": "hi"}
    assert first[9]["id"] == APPROVAL
    assert first[9]["data"]["reason"] == "needs a human"
    assert first[-1]["finishReason"] == "other"
    assert first[-1]["messageMetadata"]["status"] == "interrupted"
    resumed = _ai_sdk(RESUMED)
    assert [c["type"] for c in resumed] == [
        "start", "tool-output-available", "text-start", "text-delta", "text-end", "finish",
    ]  # fmt: skip
    assert resumed[0]["messageId"] == TURN  # the same message continues
    assert resumed[-1]["finishReason"] == "stop"


def test_ai_sdk_reports_a_failed_turn_as_an_error() -> None:
    out = _ai_sdk([{"turn_id": TURN, "seq": 1, "type": "turn.ended", "status": "failed",
                    "error": {"code": "provider_error", "message": "upstream said no"}}])  # fmt: skip
    assert out[1] == {"type": "error", "errorText": "upstream said no"}
    assert out[2]["finishReason"] == "error"
    assert ai_sdk.encode(out[1]) == b'data: {"type":"error","errorText":"upstream said no"}\n\n'


def test_user_text_is_the_last_message_when_it_is_the_users() -> None:
    ui = [{"id": "1", "role": "user", "parts": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert ai_sdk.user_text(ui) == "ab"
    assert ai_sdk.user_text([*ui, {"id": "2", "role": "assistant", "parts": []}]) is None
    assert ai_sdk.user_text([]) is None


def _continued(*items: tuple[int, str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"turn_id": TURN, "seq": seq, "type": t, **d} for seq, t, d in items]


END = {"status": "completed", "final_output": "Done.", "usage": {"input_tokens": 5, "output_tokens": 5},
       "loop_count": 1, "error": None}  # fmt: skip
LOST_IN_ONE_STREAM = _continued(
    (1, "turn.started", {"resumed_by": None}),
    (2, "message.delta", {"text": "Let "}),
    (3, "message.delta", {"text": "me check."}),
    (4, "message.completed", {"text": "Let me check.", "stop_reason": "tool_use"}),  # 4-6 never stored
    (5, "tool_call.requested", {"tool_call_id": "c1", "name": "echo", "arguments": {"text": "hi"}}),
    (6, "tool_call.completed", {"tool_call_id": "c1", "name": "echo", "is_error": False, "result": "hi"}),
    (257, "turn.resumed", {"reason": "shutdown", "from_loop": 0, "last_durable_seq": 3}),
    (258, "message.delta", {"text": "Let me look."}),
    (259, "message.completed", {"text": "Let me look.", "stop_reason": "tool_use"}),
    (260, "tool_call.requested", {"tool_call_id": "c9", "name": "echo", "arguments": {"text": "hi"}}),
    (261, "tool_call.completed", {"tool_call_id": "c9", "name": "echo", "is_error": False, "result": "hi"}),
    (262, "message.completed", {"text": "Done.", "stop_reason": "end_turn"}),
    (263, "turn.ended", END),
)
"""A stream the adapter followed across a hand-over: what the lost replica showed, then the continuation."""
REPLAYED = _continued(
    (1, "turn.started", {"resumed_by": None}),
    (2, "message.delta", {"text": "Let "}),  # stored, but the reply it began is made again
    (257, "turn.resumed", {"reason": "replica_lost", "from_loop": 0, "last_durable_seq": 2}),
    (258, "message.delta", {"text": "Done."}),
    (259, "message.completed", {"text": "Done.", "stop_reason": "end_turn"}),
    (260, "turn.ended", END),
)
"""A continued turn replayed from the store."""


def test_ag_ui_withdraws_what_a_hand_over_lost_with_a_messages_snapshot() -> None:
    out = _ag_ui(LOST_IN_ONE_STREAM)
    types = [e["type"] for e in out]
    assert types.count("RUN_STARTED") == 1
    assert types.count("TEXT_MESSAGE_START") == types.count("TEXT_MESSAGE_END") == 3
    resumed = types.index("CUSTOM")
    first_text = out[1]["messageId"]
    result_id = next(e["messageId"] for e in out if e["type"] == "TOOL_CALL_RESULT")
    assert out[resumed]["name"] == "turn.resumed"
    assert out[resumed]["value"]["last_durable_seq"] == 3
    assert out[resumed]["value"]["withdrawn_message_ids"] == [first_text, "c1", result_id]
    assert out[resumed + 1] == {"type": "MESSAGES_SNAPSHOT", "messages": []}  # nothing of this run is kept
    assert first_text not in {e.get("messageId") for e in out[resumed:]}  # the reply made again: a new message
    assert [e["toolCallId"] for e in out if e["type"] == "TOOL_CALL_START"] == ["c1", "c9"]


def test_ag_ui_closes_the_reply_a_replay_was_streaming_and_keeps_the_input_messages() -> None:
    run = ag_ui.AgUiRun(thread_id="thread", run_id="run", messages=[UserMessage(id="u1", content="hello?")])
    out = [json.loads(ag_ui.encode(e).removeprefix(b"data: ")) for e in [
        *run.started(), *(t for event in REPLAYED for t in run.translate(event))]]  # fmt: skip
    assert [e["type"] for e in out] == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "CUSTOM",
        "MESSAGES_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert out[4]["value"]["withdrawn_message_ids"] == [out[1]["messageId"]]
    assert out[5]["messages"] == [{"id": "u1", "role": "user", "content": "hello?"}]
    assert out[-1]["result"] == "Done."


def test_ai_sdk_names_what_a_hand_over_withdrew_in_a_data_part() -> None:
    out = _ai_sdk(LOST_IN_ONE_STREAM)
    assert [c["type"] for c in out].count("start") == 1
    resumed = next(c for c in out if c["type"] == "data-turn-resumed")
    assert resumed["data"]["withdrawn"] == {"text_parts": ["Let me check."], "tool_call_ids": ["c1"]}
    assert resumed["data"]["reason"] == "shutdown"
    replay = _ai_sdk(REPLAYED)
    assert [c["type"] for c in replay] == [
        "start", "text-start", "text-delta", "text-end", "data-turn-resumed", "text-start", "text-delta", "text-end",
        "finish",
    ]  # fmt: skip
    assert replay[4]["data"]["withdrawn"] == {"text_parts": ["Let "], "tool_call_ids": []}
    assert replay[1]["id"] != replay[5]["id"]


STRUCTURED = [
    {"turn_id": TURN, "seq": 1, "type": "turn.started", "resumed_by": None},
    {"turn_id": TURN, "seq": 2, "type": "message.delta", "text": '{"n": 42}'},
    {"turn_id": TURN, "seq": 3, "type": "message.completed", "text": '{"n": 42}', "stop_reason": "end_turn"},
    {"turn_id": TURN, "seq": 4, "type": "turn.ended", "status": "completed", "final_output": '{"n": 42}',
     "output": {"n": 42}, "usage": {"input_tokens": 5, "output_tokens": 5}, "loop_count": 1, "error": None},
]  # fmt: skip


def test_ag_ui_finishes_a_structured_run_with_the_parsed_object_as_its_result() -> None:
    finished = _ag_ui(STRUCTURED)[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["result"] == {"n": 42}


def test_ai_sdk_passes_a_structured_turns_object_on_as_a_data_output_part() -> None:
    chunks = _ai_sdk(STRUCTURED)
    kinds = [c["type"] for c in chunks]
    assert kinds[-3:] == ["text-end", "data-output", "finish"]
    assert chunks[-2] == {"type": "data-output", "id": TURN, "data": {"n": 42}}
    assert "data-output" not in [c["type"] for c in _ai_sdk(RESUMED)]
