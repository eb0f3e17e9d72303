"""A long conversation past a small context window, end to end on the scripted provider.

Many turns, each with tool rounds, on an agent whose window is 1,024 tokens (the smallest an agent
may set): every prompt stays under it, the stored summary covers exactly the messages the prompt no
longer carries, and the model still gets the most recent messages verbatim.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.context.compaction import SUMMARY_LABEL, SUMMARY_SYSTEM_PROMPT, prompt_tokens
from app.models import Message, Summary
from app.providers.base import ModelRequest, ProviderEvent
from app.providers.registry import ProviderRegistry
from app.providers.scripted import ScriptedProvider
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, read_turn

WINDOW = 1024
TRIGGER = 512
SYSTEM = "You are a research assistant."
LOOKUP = {
    "text": "Let me look that up.",
    "tool_calls": [{"name": "echo", "arguments": {"text": " ".join(f"fact{i}" for i in range(30))}}],
}
ANSWER = {"text": "Here is what I found: " + " ".join(f"finding{i}" for i in range(20))}
"""The script is LOOKUP, LOOKUP, ANSWER: up to two tool rounds a turn. Summarisation calls take their
script step in turn too, which shifts the cycle but always reaches an answer within three calls."""
TURNS = 24


class Recording(ScriptedProvider):
    """The scripted provider, keeping every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        async for item in super().stream(request):
            yield item


@pytest.fixture
def recorder(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> Recording:
    recording = Recording()
    monkeypatch.setattr(app.state.container.turns, "providers", ProviderRegistry({"scripted": recording}))
    return recording


def words(request: ModelRequest) -> int:
    """What the scripted provider reports as the prompt's input tokens."""
    return len(request.system.split()) + sum(len(m.content.split()) for m in request.messages)


async def test_a_long_conversation_stays_under_the_window_with_summaries(
    client: httpx.AsyncClient, alice: dict[str, str], recorder: Recording, sql: AsyncEngine
) -> None:
    compaction = {"trigger_ratio": TRIGGER / WINDOW, "keep_last_messages": 4}
    config = scripted_config(LOOKUP, LOOKUP, ANSWER, system_prompt=SYSTEM, context={"compaction": compaction})
    config["model"]["context_window"] = WINDOW
    agent = await create_agent(client, alice, config)
    session = await create_session(client, alice, agent["id"])
    frames: list[list[Frame]] = []
    for turn in range(TURNS):
        question = f"Question {turn}: what do we know about topic{turn} and its history?"
        frames.append(await read_turn(client, "POST", f"/sessions/{session['id']}/turns",
                                      json={"input": question}, headers=alice))  # fmt: skip
        assert frames[-1][-1].data["status"] == "completed", frames[-1][-1].data

    replies = [r for r in recorder.requests if r.system == SYSTEM]
    summarising = [r for r in recorder.requests if r.system == SUMMARY_SYSTEM_PROMPT]
    assert len(replies) > TURNS
    assert len(summarising) >= 2, "the conversation was compacted more than once"
    for request in replies:
        assert prompt_tokens(request.system, request.messages, "scripted") <= TRIGGER
        assert words(request) <= WINDOW
    for request in summarising:
        assert words(request) + request.max_tokens <= WINDOW

    session_id = uuid.UUID(session["id"])
    async with sql.connect() as conn:
        stored = (await conn.execute(
            select(Message.id, Message.role, Message.content)
            .where(Message.session_id == session_id).order_by(Message.id)
        )).all()  # fmt: skip
        summaries = (await conn.execute(
            select(Summary.first_message_id, Summary.last_message_id, Summary.message_count, Summary.model_calls,
                   Summary.content).where(Summary.session_id == session_id).order_by(Summary.last_message_id)
        )).all()  # fmt: skip
    assert sum(1 for row in stored if row.role == "tool") >= TURNS, "many tool rounds"
    assert len(summaries) >= 2
    for summary in summaries:
        assert summary.first_message_id == stored[0].id
        assert summary.last_message_id == stored[summary.message_count - 1].id
    latest = summaries[-1]

    last = replies[-1]
    assert last.messages[0].role == "user"
    assert last.messages[0].content == f"{SUMMARY_LABEL}\n\n{latest.content}"
    kept = [(m.role, m.content) for m in last.messages[1:]]
    after_summary = [(row.role, row.content) for row in stored[latest.message_count :]]
    assert kept == after_summary[:-1], "the model got every message after the summary, verbatim"
    assert len(kept) >= 4
    assert latest.message_count + len(kept) == len(stored) - 1

    previous = summaries[-2]
    calls = summarising[len(summarising) - (latest.model_calls - previous.model_calls) :]
    covered = stored[previous.message_count : latest.message_count]
    text = "\n".join(r.messages[0].content for r in calls)
    assert calls[0].messages[0].content.startswith(f"<summary_so_far>\n{previous.content}")
    for row in covered:
        assert row.content.strip() in text
    assert f"[user]\n{stored[latest.message_count].content}" not in text

    every_event = [f for turn_frames in frames for f in turn_frames]
    compacted = [f.data for f in every_event if f.event == "context.compacted"]
    assert {c["strategy"] for c in compacted} == {"summarize"}
    assert all(c["tokens_after"] <= TRIGGER < c["tokens_before"] for c in compacted)
    for turn_frames in frames:
        usage = [f.data for f in turn_frames if f.event == "usage"]
        ended: dict[str, Any] = turn_frames[-1].data
        assert sum(u["input_tokens"] for u in usage) == ended["usage"]["input_tokens"]
        assert sum(u["output_tokens"] for u in usage) == ended["usage"]["output_tokens"]
    assert sum(1 for f in every_event if f.event == "usage" and f.data["kind"] == "compaction") == len(summarising)
