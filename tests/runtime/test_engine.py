"""The engine's front door, called directly: start, follow (typed events), resume, cancel, close.

The agents and sessions are made through the API (they are not the engine's); everything about the
turn goes through `TurnEngine` alone, as the resources do. Every test runs on both backends.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.errors import Conflict, NotFound
from app.models import Approval
from app.runtime.engine import TurnEngine, TurnRequest
from app.runtime.port.events import Followed, LoggedEvent, Reconnect
from tests.factories import create_agent, create_session, scripted_config
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session

GATED = scripted_config(
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2*21"}}]},
    {"text": "the answer is 42"},
    policies=[{"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}],
)


@pytest.fixture(scope="module")
def app_and_client(backend_app: tuple[FastAPI, httpx.AsyncClient]) -> tuple[FastAPI, httpx.AsyncClient]:
    return backend_app


def engine_of(app: FastAPI) -> TurnEngine:
    engine: TurnEngine = app.state.container.turn_engine
    return engine


async def events(followed: AsyncIterator[Followed]) -> list[LoggedEvent | Reconnect]:
    found: list[LoggedEvent | Reconnect] = []
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        async for item in followed:
            found += [item] if isinstance(item, Reconnect) else list(item)
    return found


async def test_a_started_turn_is_followed_as_typed_events_and_replays_the_same(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await create_session(client, alice, (await create_agent(client, alice))["id"])
    caller = Principal("alice", tenant)
    started = await engine_of(app).start(caller, uuid.UUID(session["id"]), TurnRequest(input="hi"))

    live = await events(started.follow())
    stored = await events(engine_of(app).follow(tenant, started.turn_id, 0))

    assert all(isinstance(e, LoggedEvent) for e in live)
    assert [e.type for e in live if isinstance(e, LoggedEvent)][0] == "turn.started"
    assert [e.seq for e in live if isinstance(e, LoggedEvent)] == list(range(1, len(live) + 1))
    assert live == stored, "what a follower saw live is what the log replays"
    ended = live[-1]
    assert isinstance(ended, LoggedEvent)
    assert ended.type == "turn.ended"
    assert ended.body()["status"] == "completed"


async def test_a_turn_asked_to_wait_is_queued_and_followed_through_the_store(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await slow_session(client, alice, text="one two three four five", delay_ms=20)
    caller, session_id = Principal("alice", tenant), uuid.UUID(session["id"])
    first = await engine_of(app).start(caller, session_id, TurnRequest(input="first"))
    queued = await engine_of(app).start(caller, session_id, TurnRequest(input="next", multitask_strategy="enqueue"))

    assert queued.first_seq == 1
    followed = await events(queued.follow())
    ends = [e.body()["status"] for e in followed if isinstance(e, LoggedEvent) and e.type == "turn.ended"]
    assert ends == ["completed"]
    assert (await events(first.follow()))[-1] != followed[-1]


async def test_a_second_start_is_refused_while_the_session_is_busy(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await slow_session(client, alice, text="one two three four five six", delay_ms=30)
    caller, session_id = Principal("alice", tenant), uuid.UUID(session["id"])
    first = await engine_of(app).start(caller, session_id, TurnRequest(input="first"))

    with pytest.raises(Conflict) as refused:
        await engine_of(app).start(caller, session_id, TurnRequest(input="second"))
    assert refused.value.extra.get("active_turn_id") == str(first.turn_id)
    await events(first.follow())


async def test_another_tenant_cannot_start_in_the_session(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await create_session(client, alice, (await create_agent(client, alice))["id"])
    with pytest.raises(NotFound):
        await engine_of(app).start(Principal("alice", "another-tenant"), uuid.UUID(session["id"]), TurnRequest("hi"))


async def test_a_resume_records_the_decision_and_runs_the_call_that_waited_in_one_call(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await create_session(client, alice, (await create_agent(client, alice, GATED))["id"])
    caller = Principal("alice", tenant)
    started = await engine_of(app).start(caller, uuid.UUID(session["id"]), TurnRequest(input="go"))
    first_run = await events(started.follow())
    [asked] = [e for e in first_run if isinstance(e, LoggedEvent) and e.type == "approval.required"]
    approval_id = uuid.UUID(asked.body()["approval_id"])

    async def approve(db: AsyncSession) -> uuid.UUID | None:
        await db.execute(update(Approval).where(Approval.id == approval_id).values(status="approved"))
        return approval_id

    resumed = await engine_of(app).resume(caller, started.turn_id, approve)
    assert resumed is not None
    second_run = await events(resumed.follow())

    opened = second_run[0]
    assert isinstance(opened, LoggedEvent)
    assert opened.body()["resumed_by"] == str(approval_id)
    assert isinstance(first_run[-1], LoggedEvent)
    assert opened.seq == first_run[-1].seq + 1
    ended = second_run[-1]
    assert isinstance(ended, LoggedEvent)
    assert ended.body()["final_output"] == "the answer is 42"
    with pytest.raises(Conflict):
        await engine_of(app).resume(caller, started.turn_id, approve)


async def test_a_resume_whose_decisions_are_not_all_taken_waits(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await create_session(client, alice, (await create_agent(client, alice, GATED))["id"])
    caller = Principal("alice", tenant)
    started = await engine_of(app).start(caller, uuid.UUID(session["id"]), TurnRequest(input="go"))
    await events(started.follow())

    async def still_waiting(_: AsyncSession) -> uuid.UUID | None:
        return None

    assert await engine_of(app).resume(caller, started.turn_id, still_waiting) is None
    status, _ = await engine_of(app).manager.store.progress(tenant, started.turn_id)
    assert status == "interrupted"


async def test_a_cancel_ends_the_running_turn_and_its_followers_read_the_end(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await slow_session(client, alice, text=" ".join(["word"] * 200), delay_ms=20)
    caller = Principal("alice", tenant)
    started = await engine_of(app).start(caller, uuid.UUID(session["id"]), TurnRequest(input="talk"))

    await engine_of(app).cancel(tenant, started.turn_id)

    followed = await events(started.follow())
    ended = followed[-1]
    assert isinstance(ended, LoggedEvent)
    assert ended.body()["status"] == "cancelled"
    with pytest.raises(Conflict):
        await engine_of(app).cancel(tenant, started.turn_id)


async def test_closing_a_session_cancels_its_interrupted_turn(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await create_session(client, alice, (await create_agent(client, alice, GATED))["id"])
    caller = Principal("alice", tenant)
    started = await engine_of(app).start(caller, uuid.UUID(session["id"]), TurnRequest(input="go"))
    await events(started.follow())

    await engine_of(app).close_session(tenant, uuid.UUID(session["id"]))

    status, _ = await engine_of(app).manager.store.progress(tenant, started.turn_id)
    assert status == "cancelled"
