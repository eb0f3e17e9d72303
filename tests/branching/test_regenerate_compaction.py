"""Compaction in a conversation with regenerated turns, on PostgreSQL and SQLite: a summary counts and
names the messages of the history (superseded ones are not in it), and the next prompt is that summary
followed by exactly the later kept messages."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from app.context.compaction import SUMMARY_LABEL, SUMMARY_SYSTEM_PROMPT
from app.models import Message, Summary
from tests.branching.conftest import Branching, new_session, prompt_of, turn

SYSTEM = "You are a research assistant."
LOOKUP = {
    "text": "Let me look.",
    "tool_calls": [{"name": "echo", "arguments": {"text": " ".join(f"f{i}" for i in range(30))}}],
}
ANSWER = {"text": "Found: " + " ".join(f"finding{i}" for i in range(20))}
COMPACTION = {"trigger_ratio": 0.5, "keep_last_messages": 4}


async def test_summaries_after_regenerations_cover_the_kept_history_only(
    branching: Branching, alice: dict[str, str]
) -> None:
    api = branching.client
    session = await new_session(
        api, alice, LOOKUP, ANSWER, system_prompt=SYSTEM, context={"compaction": COMPACTION},
        model={"provider": "scripted", "script": [LOOKUP, ANSWER], "context_window": 1024},
    )  # fmt: skip
    for number in range(8):
        ended = (await turn(api, alice, session["id"], f"Question {number} about topic{number}?"))[-1].data
        if number % 2 == 0:
            again = await api.post(
                f"/turns/{ended['turn_id']}/regenerate", json={}, headers={**alice, "Accept": "application/json"}
            )
            assert again.json()["status"] == "completed", again.text

    session_id = uuid.UUID(session["id"])
    async with branching.app.state.container.engine.connect() as conn:
        stored = (await conn.execute(
            select(Message.id, Message.role, Message.content, Message.superseded_by_turn_id)
            .where(Message.session_id == session_id).order_by(Message.id)
        )).all()  # fmt: skip
        summaries = (await conn.execute(
            select(Summary.first_message_id, Summary.last_message_id, Summary.message_count, Summary.content)
            .where(Summary.session_id == session_id).order_by(Summary.last_message_id)
        )).all()  # fmt: skip
    history = [row for row in stored if row.superseded_by_turn_id is None]
    assert len(history) < len(stored), "turns were superseded"
    assert summaries, "the conversation was compacted"
    assert any(r.system == SUMMARY_SYSTEM_PROMPT for r in branching.model.requests)
    for summary in summaries:
        assert summary.first_message_id == history[0].id
        assert summary.last_message_id == history[summary.message_count - 1].id

    latest = summaries[-1]
    last = [r for r in branching.model.requests if r.system.startswith(SYSTEM)][-1]
    assert prompt_of(last)[0] == ("user", f"{SUMMARY_LABEL}\n\n{latest.content}")
    assert prompt_of(last)[1:] == [(row.role, row.content) for row in history[latest.message_count : -1]]
