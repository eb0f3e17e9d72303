"""Turns of one session share the conversation; the scripted provider's cursor spans turns."""

from __future__ import annotations

import httpx

from tests.sse import read_turn
from tests.turns.support import scripted_session


async def _run(client: httpx.AsyncClient, headers: dict[str, str], session_id: str, text: str) -> dict[str, object]:
    frames = await read_turn(client, "POST", f"/sessions/{session_id}/turns", json={"input": text}, headers=headers)
    assert frames[-1].event == "turn.ended"
    return frames[-1].data


async def test_two_turns_in_a_row_share_the_conversation(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice, {"text": "first reply"}, {"text": "second reply"})
    await _run(client, alice, session["id"], "hello there")
    await _run(client, alice, session["id"], "and again")
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "hello there"),
        ("assistant", "first reply"),
        ("user", "and again"),
        ("assistant", "second reply"),
    ]
    assert messages[0]["turn_id"] == messages[1]["turn_id"] != messages[2]["turn_id"] == messages[3]["turn_id"]


async def test_second_turns_prompt_contains_the_first_turn(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    # Scripted usage is one token a word: system prompt (5) + every history message the model sees.
    session = await scripted_session(client, alice, {"text": "first reply"}, {"text": "second reply"})
    first = await _run(client, alice, session["id"], "hello there")
    second = await _run(client, alice, session["id"], "and again")
    assert first["usage"] == {"input_tokens": 5 + 2, "output_tokens": 2}
    assert second["usage"] == {"input_tokens": 5 + 2 + 2 + 2, "output_tokens": 2}


async def test_scripted_call_index_continues_across_turns(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice, {"text": "one"}, {"text": "two"}, {"text": "three"})
    outputs = [(await _run(client, alice, session["id"], f"turn {i}"))["final_output"] for i in range(4)]
    assert outputs == ["one", "two", "three", "one"]


async def test_tool_loops_advance_the_scripted_cursor_for_the_next_turn(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    calc = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}
    session = await scripted_session(client, alice, calc, {"text": "it is 42"}, {"text": "bye"})
    assert (await _run(client, alice, session["id"], "6*7?"))["final_output"] == "it is 42"
    assert (await _run(client, alice, session["id"], "thanks"))["final_output"] == "bye"
