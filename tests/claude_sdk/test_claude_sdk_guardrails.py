"""The `output` and `tool_result` points on the Claude SDK runtime: the same guard as the loop's, on
Claude Code's text deltas and on what its in-process tools return."""

from __future__ import annotations

import json

import httpx

from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, turn

CARD = "4111 1111 1111 1111"
REDACT_CARDS = {"id": "cards", "point": "output", "detect": "credit_card", "verdict": "redact"}
NO_FALCON = {"id": "falcon", "point": "output", "output_regex": "(?i)falcon", "verdict": "deny", "reason": "codename"}
REDACT_RESULT_CARDS = {"id": "result-cards", "point": "tool_result", "detect": "credit_card", "verdict": "redact"}


async def test_claude_code_text_is_redacted_before_any_frame_or_row(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, policies=[REDACT_CARDS])
    anthropic.play(Step(text=f"Your card {CARD} is on file."))
    frames = await turn(api, alice, session_id, "card?")
    guarded = "Your card [REDACTED:credit_card] is on file."
    assert frames[-1].data["status"] == "completed"
    assert "".join(d["text"] for d in of(frames, "message.delta")) == guarded
    assert [d["text"] for d in of(frames, "message.completed")] == [guarded]
    assert frames[-1].data["final_output"] == guarded
    assert "4111 1111" not in json.dumps([f.data for f in frames])
    messages = (await api.get(f"/sessions/{session_id}/messages", headers=alice)).json()["items"]
    assert [m["content"] for m in messages if m["role"] == "assistant"] == [guarded]
    decisions = [(d["point"], d["verdict"], d["detector"], d["match_count"]) for d in of(frames, "policy.decision")]
    assert decisions == [("output", "redact", "credit_card", 1)]


async def test_a_deny_ends_the_sdk_turn_guardrail_blocked(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, policies=[NO_FALCON])
    anthropic.play(Step(text="word " * 60 + "then Falcon lands and the rest follows"))
    frames = await turn(api, alice, session_id, "plans?")
    end = frames[-1].data
    assert (end["status"], end["error"]["code"]) == ("failed", "guardrail_blocked")
    assert "Falcon" not in json.dumps([f.data for f in frames])
    assert of(frames, "message.completed") == []
    assert [(d["verdict"], d["rule_id"]) for d in of(frames, "policy.decision")] == [("deny", "falcon")]


async def test_an_in_process_tool_result_is_redacted_before_claude_code_sees_it(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice, policies=[REDACT_RESULT_CARDS])
    anthropic.play(Step(tool_calls=[("mcp__agent__echo", {"text": f"card {CARD}"})]), Step(text="done"))
    frames = await turn(api, alice, session_id, "echo it")
    assert frames[-1].data["status"] == "completed"
    assert [d["result"] for d in of(frames, "tool_call.completed")] == ["card [REDACTED:credit_card]"]
    sent = json.dumps(anthropic.loop_requests()[-1]["messages"])
    assert "card [REDACTED:credit_card]" in sent
    assert sent.count(CARD) == 1  # the model's own call arguments, not the result
