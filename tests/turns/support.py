"""Helpers shared by the turn tests: sessions on scripted agents, bounded polling, partial reads."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import ConfigDict
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Turn, TurnEvent
from app.providers.base import ToolCall
from app.runtime.port.events import EventBody
from app.runtime.port.journal import TurnIdentity
from app.runtime.store.batch import LEDGER, write_rows
from app.runtime.store.turns import TurnStore, ledger_row
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, iter_frames

POLL_TIMEOUT_SECONDS = 30.0
"""A deadline for polling, not a wait: what passes in 0.1 s alone may take seconds on a loaded CI machine."""
LONG_TEXT = " ".join(f"word{i}" for i in range(2000))
"""With chunk_delay_ms 30 this streams for about a minute: a turn the test must stop or outwait."""
FINAL_STATUSES = {"completed", "loop_limit", "budget_exceeded", "cancelled", "failed"}


class RawEvent(EventBody):
    """An event of any type and fields, for tests of the event log itself."""

    model_config = ConfigDict(extra="allow")


def now() -> datetime:
    return datetime.now(UTC)


def raw_event(event_type: str, data: dict[str, Any]) -> EventBody:
    return RawEvent(type=event_type, **data)


async def runner_of(engine: AsyncEngine, turn_id: uuid.UUID) -> uuid.UUID:
    async with engine.connect() as conn:
        runner: uuid.UUID = await conn.scalar(select(Turn.runner_id).where(Turn.id == turn_id))
    return runner


async def scripted_session(
    client: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    agent = await create_agent(client, headers, scripted_config(*steps, **extra))
    return await create_session(client, headers, agent["id"])


async def slow_session(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    *later_steps: dict[str, Any],
    text: str = LONG_TEXT,
    delay_ms: int = 30,
) -> dict[str, Any]:
    """A session whose first model call streams `text` word by word, `delay_ms` apart."""
    config = scripted_config({"text": text}, *later_steps)
    config["model"]["chunk_delay_ms"] = delay_ms
    agent = await create_agent(client, headers, config)
    return await create_session(client, headers, agent["id"])


async def get_turn(client: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> dict[str, Any]:
    response = await client.get(f"/turns/{turn_id}", headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def wait_for_status(
    client: httpx.AsyncClient, headers: dict[str, str], turn_id: str, statuses: set[str] = FINAL_STATUSES
) -> dict[str, Any]:
    """Poll GET /turns/{id} until its status is one of `statuses` (bounded, never a timing assert)."""
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            turn = await get_turn(client, headers, turn_id)
            if turn["status"] in statuses:
                return turn
            await asyncio.sleep(0.05)


async def wait_for_stored_event(engine: AsyncEngine, turn_id: str, event: str) -> None:
    """Poll the turn's stored events until one is `event`: the service itself has seen it by then."""
    query = select(TurnEvent.seq).where(TurnEvent.turn_id == uuid.UUID(turn_id), TurnEvent.type == event).limit(1)
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            async with engine.connect() as conn:
                if await conn.scalar(query) is not None:
                    return
            await asyncio.sleep(0.05)


class FrameReader:
    """Reads one open SSE response in parts; the frames it has not handed out yet stay buffered."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream"), response.headers
        self._frames = iter_frames(response)

    async def until(self, event: str) -> list[Frame]:
        """Frames up to and including the next `event`; the stream stays open."""
        frames: list[Frame] = []
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            async for frame in self._frames:
                frames.append(frame)
                if frame.event == event:
                    return frames
        raise AssertionError(f"the stream ended without {event}: {[f.event for f in frames]}")

    async def rest(self) -> list[Frame]:
        """Every remaining frame; the stream must end by itself (no endless pings)."""
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            return [frame async for frame in self._frames]


async def dispatch(store: TurnStore, ident: TurnIdentity, *, key: str, loop: int, call: ToolCall) -> None:
    """A `dispatched` ledger row, written as a run writes it before the call leaves."""
    await write_rows(store.sql, [(LEDGER, ledger_row(ident, key=key, loop=loop, call=call, result=None))])
