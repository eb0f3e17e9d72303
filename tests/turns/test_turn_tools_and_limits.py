"""The loop over HTTP with the scripted provider: tool round trips, loop limits, output budgets."""

from __future__ import annotations

import httpx

from tests.sse import Frame, read_turn
from tests.turns.support import scripted_session

CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}
ENDLESS = {"text": "still working", "tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]}


def _of(frames: list[Frame], event: str) -> list[Frame]:
    return [f for f in frames if f.event == event]


async def _turn(client: httpx.AsyncClient, headers: dict[str, str], session_id: str, **body: object) -> list[Frame]:
    return await read_turn(
        client, "POST", f"/sessions/{session_id}/turns", json={"input": "go", **body}, headers=headers
    )


async def test_calculator_call_streams_request_then_result_then_the_final_answer(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await scripted_session(client, alice, CALC, {"text": "The answer is 4"})
    frames = await _turn(client, alice, session["id"])
    types = [f.event for f in frames]
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    requested, completed = _of(frames, "tool_call.requested"), _of(frames, "tool_call.completed")
    assert len(requested) == len(completed) == 1
    assert requested[0].data["name"] == "calculator"
    assert requested[0].data["arguments"] == {"expression": "2+2"}
    assert completed[0].data["tool_call_id"] == requested[0].data["tool_call_id"]
    assert completed[0].data["result"] == "4"
    assert completed[0].data["is_error"] is False
    answer = _of(frames, "message.completed")[-1]
    assert requested[0].id < completed[0].id < answer.id < frames[-1].id
    assert answer.data["text"] == "The answer is 4"
    assert types[-1] == "turn.ended"
    assert types.count("turn.ended") == 1
    ended = frames[-1].data
    assert ended["status"] == "completed"
    assert ended["final_output"] == "The answer is 4"
    assert ended["loop_count"] == 2


async def test_tool_round_trip_visits_the_loop_nodes_in_order(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice, CALC, {"text": "done"})
    frames = await _turn(client, alice, session["id"])
    started = [(f.data["node"], f.data["loop"]) for f in _of(frames, "node.started")]
    assert started == [
        ("assemble_context", 0),
        ("validate_prompt", 0),
        ("call_llm", 0),
        ("parse_response", 0),
        ("execute_tools", 0),
        ("ingest_result", 0),
        ("assemble_context", 1),
        ("validate_prompt", 1),
        ("call_llm", 1),
        ("parse_response", 1),
        ("ingest_result", 1),
    ]


async def test_tool_result_is_stored_in_the_conversation(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice, CALC, {"text": "four"})
    await _turn(client, alice, session["id"])
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    call = messages[1]["tool_calls"][0]
    assert call["name"] == "calculator"
    assert messages[2]["tool_call_id"] == call["id"]
    assert messages[2]["content"] == "4"


async def test_endless_tool_script_ends_in_loop_limit_after_max_loops_model_calls(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await scripted_session(client, alice, ENDLESS, limits={"max_loops": 3})
    frames = await _turn(client, alice, session["id"])
    assert len(_of(frames, "message.completed")) == 3
    assert len(_of(frames, "tool_call.completed")) == 3
    ended = frames[-1]
    assert ended.event == "turn.ended"
    assert ended.data["status"] == "loop_limit"
    assert ended.data["final_output"] == "still working"
    assert ended.data["loop_count"] == 3
    assert ended.data["error"] is None
    turn = (await client.get(f"/turns/{ended.data['turn_id']}", headers=alice)).json()
    assert turn["status"] == "loop_limit"
    assert turn["final_output"] == "still working"


async def test_request_limits_lower_max_loops(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice, ENDLESS, limits={"max_loops": 5})
    frames = await _turn(client, alice, session["id"], limits={"max_loops": 2})
    assert len(_of(frames, "message.completed")) == 2
    assert frames[-1].data["status"] == "loop_limit"
    turn = (await client.get(f"/turns/{frames[-1].data['turn_id']}", headers=alice)).json()
    assert turn["max_loops"] == 2


async def test_request_limits_never_raise_max_loops_above_the_snapshot(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await scripted_session(client, alice, ENDLESS, limits={"max_loops": 3})
    frames = await _turn(client, alice, session["id"], limits={"max_loops": 10})
    assert len(_of(frames, "message.completed")) == 3
    assert frames[-1].data["status"] == "loop_limit"
    assert frames[-1].data["loop_count"] == 3
    turn = (await client.get(f"/turns/{frames[-1].data['turn_id']}", headers=alice)).json()
    assert turn["max_loops"] == 3


async def test_output_budget_reached_with_tool_calls_pending_ends_in_budget_exceeded(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    # One call costs 2 words + 1 tool call = 3 output tokens, so the 2nd call may only spend 2: the
    # model is cut there (stop_reason max_tokens) and the turn ends at its budget, never past it.
    session = await scripted_session(client, alice, ENDLESS, limits={"max_loops": 10})
    frames = await _turn(client, alice, session["id"], limits={"max_output_tokens": 5})
    ended = frames[-1].data
    assert ended["status"] == "budget_exceeded"
    assert [f.data["stop_reason"] for f in _of(frames, "message.completed")] == ["tool_use", "max_tokens"]
    assert len(_of(frames, "tool_call.completed")) == 1
    assert ended["usage"]["output_tokens"] == 5
    assert ended["error"]["code"] == "budget_exceeded"
    assert ended["error"]["spent"]["output_tokens"] == 5
    assert ended["final_output"] == "still working"


async def test_snapshot_output_budget_applies_without_request_limits(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await scripted_session(client, alice, ENDLESS, limits={"max_loops": 10, "max_output_tokens": 3})
    frames = await _turn(client, alice, session["id"], limits={"max_output_tokens": 1000})
    assert frames[-1].data["status"] == "budget_exceeded"
    assert len(_of(frames, "message.completed")) == 1
    assert _of(frames, "tool_call.completed") == []


async def test_failing_tool_becomes_an_error_result_and_the_loop_goes_on(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    bad = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2+"}}]}
    session = await scripted_session(client, alice, bad, {"text": "sorry about that"})
    frames = await _turn(client, alice, session["id"])
    completed = _of(frames, "tool_call.completed")
    assert len(completed) == 1
    assert completed[0].data["is_error"] is True
    assert frames[-1].data["status"] == "completed"
    assert frames[-1].data["final_output"] == "sorry about that"


async def test_tool_the_agent_does_not_have_is_an_error_result_never_a_call(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    echo = {"tool_calls": [{"name": "echo", "arguments": {"text": "leak"}}]}
    config_tools = {"tools": ["builtin:calculator"]}
    session = await scripted_session(client, alice, echo, {"text": "ok"}, **config_tools)
    frames = await _turn(client, alice, session["id"])
    completed = _of(frames, "tool_call.completed")[0].data
    assert completed["is_error"] is True
    assert completed["result"] != "leak"
    assert frames[-1].data["status"] == "completed"


async def test_several_calls_in_one_step_complete_in_order(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    step = {
        "tool_calls": [
            {"name": "calculator", "arguments": {"expression": "1+1"}},
            {"name": "echo", "arguments": {"text": "hi"}},
            {"name": "calculator", "arguments": {"expression": "3*3"}},
        ]
    }
    session = await scripted_session(client, alice, step, {"text": "done"})
    frames = await _turn(client, alice, session["id"])
    requested = [f.data["tool_call_id"] for f in _of(frames, "tool_call.requested")]
    completed = _of(frames, "tool_call.completed")
    assert [f.data["tool_call_id"] for f in completed] == requested
    assert [f.data["result"] for f in completed] == ["2", "hi", "9"]
    assert frames[-1].data["loop_count"] == 2
