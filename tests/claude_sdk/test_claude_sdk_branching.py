"""Branching on the Claude SDK runtime: a regenerated turn resumes Claude Code's transcript before the
superseded prompt (the model is sent the kept conversation, not the superseded reply), and a fork's
first turn rebuilds the kept conversation from ours (its session has no transcript yet)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, turn
from tests.sse import read_turn


def _said(body: dict[str, Any]) -> str:
    """Everything the model call was given as conversation, as text."""
    return json.dumps(body["messages"])


async def test_a_regenerated_turn_resumes_the_transcript_before_the_superseded_prompt(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="answer one"), Step(text="superseded answer"), Step(text="answer again"))
    await turn(api, alice, session_id, "question one")
    old = (await turn(api, alice, session_id, "question two"))[-1].data["turn_id"]

    frames = await read_turn(
        api, "POST", f"/turns/{old}/regenerate", json={"input": "question two, again"}, headers=alice
    )

    assert (frames[-1].data["status"], frames[-1].data["final_output"]) == ("completed", "answer again")
    sent = _said(anthropic.loop_requests()[-1])
    assert "question one" in sent
    assert "answer one" in sent
    assert "question two, again" in sent
    assert "superseded answer" not in sent
    assert '"question two"' not in sent
    items = (await api.get(f"/sessions/{session_id}/messages", headers=alice)).json()["items"]
    assert [m["content"] for m in items] == ["question one", "answer one", "question two, again", "answer again"]


async def test_a_forks_first_turn_gives_claude_code_the_kept_conversation(
    api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="answer one"), Step(text="answer two"), Step(text="answer in the fork"))
    await turn(api, alice, session_id, "question one")
    await turn(api, alice, session_id, "question two")
    items = (await api.get(f"/sessions/{session_id}/messages", headers=alice)).json()["items"]
    fork = (
        await api.post(f"/sessions/{session_id}/fork", json={"at_message_id": items[1]["id"]}, headers=alice)
    ).json()

    frames = await turn(api, alice, fork["id"], "question in the fork")

    assert frames[-1].data["final_output"] == "answer in the fork"
    sent = _said(anthropic.loop_requests()[-1])
    assert "question one" in sent
    assert "answer one" in sent
    assert "question in the fork" in sent
    assert "question two" not in sent
    assert "answer two" not in sent
