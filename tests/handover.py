"""A turn handed over mid-reply, as its clients meet it: a cut stream, then a continuation in the store.

`HandOverApp` stands in front of the real app. The first turn a client starts through it runs for
real (scripted provider, stored messages, settled row); then its stored event log is rewritten into
what a hand-over leaves (`handed_over`): the lost run's events up to `last_durable_seq`, its open
reply cut after a few deltas, and the continuation numbered above the lost run's ceiling — starting
with `turn.resumed` and making the interrupted model call again. The client itself gets what the
lost replica's stream showed it: the stored part plus some events that were never stored, then an
SSE `retry:` line and no `turn.ended`. A reconnect (`Last-Event-ID`) reaches the real replay.

The log is made by the test (not by an engine hand-over) so each client's reaction is pinned to
exact events; the engine's own hand-over is proven in tests/runtime.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.sse import encode_frame
from app.models import Turn, TurnEvent
from tests.factories import scripted_config

TOOL_THEN_ANSWER = scripted_config(
    {"text": "Let me ask the echo tool.", "tool_calls": [{"name": "echo", "arguments": {"text": "hello"}}]},
    {"text": "The echo said hello."},
)
"""An agent whose turn the clients' hand-over tests cut in its first reply (`HandOver(durable=2, lost=13)`
loses the rest of that reply, its tool call and the call's result)."""
CEILING_BLOCK = 256
RETRY_MS = 50
NEW_TURN = re.compile(r"^/sessions/[^/]+/turns$")


@dataclass(frozen=True)
class HandOver:
    """Where the lost run stopped: in its `reply`-th model reply (0-based), after `durable` stored deltas.

    `lost` events followed on the lost replica's stream and were never stored; their text is
    changed (upper case), as a model called again need not say the same. A drained replica ends the
    stream with `retry:`; a `died` one drops the connection mid-response instead.
    """

    reply: int = 0
    durable: int = 1
    lost: int = 6
    reason: str = "shutdown"
    died: bool = False


@dataclass
class HandedOver:
    shown: list[dict[str, Any]]
    """What the lost replica's stream showed (stored part + lost part)."""
    stored: list[dict[str, Any]]
    """The turn's stored log after the continuation."""


def handed_over(events: list[dict[str, Any]], plan: HandOver) -> HandedOver:
    """The hand-over of a finished run's events (its stored log, seq 1…n)."""
    starts = [i for i, e in enumerate(events) if e["type"] == "message.delta"
              and (i == 0 or events[i - 1]["type"] != "message.delta")]  # fmt: skip
    first = starts[plan.reply]
    cut = first + plan.durable
    lost = [{**e, "text": e["text"].upper()} if e["type"] == "message.delta" else e
            for e in events[cut : cut + plan.lost]]  # fmt: skip
    shown = events[:cut] + lost
    ceiling = (shown[-1]["seq"] // CEILING_BLOCK + 1) * CEILING_BLOCK
    durable_seq = events[cut - 1]["seq"]
    loop = next((e["loop"] for e in reversed(events[:first]) if "loop" in e), 0)
    resumed = {"turn_id": events[0]["turn_id"], "seq": ceiling + 1, "type": "turn.resumed",
               "reason": plan.reason, "from_loop": loop, "last_durable_seq": durable_seq}  # fmt: skip
    again = [{**e, "seq": ceiling + 2 + i} for i, e in enumerate(events[first:])]
    return HandedOver(shown=shown, stored=[*events[:cut], resumed, *again])


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(encode_frame(e["seq"], e["type"], orjson.dumps(e).decode()) for e in events)


async def stored_events(sql: AsyncEngine, turn_id: str) -> list[dict[str, Any]]:
    async with sql.connect() as conn:
        rows = await conn.execute(select(TurnEvent.data).where(TurnEvent.turn_id == uuid.UUID(turn_id))
                                  .order_by(TurnEvent.seq))  # fmt: skip
        return [orjson.loads(data) for (data,) in rows]


async def store_log(sql: AsyncEngine, events: list[dict[str, Any]]) -> None:
    """Replaces a turn's stored events (tenant taken from its turn row)."""
    turn_id = uuid.UUID(events[0]["turn_id"])
    async with sql.begin() as conn:
        tenant = (await conn.execute(select(Turn.tenant_id).where(Turn.id == turn_id))).scalar_one()
        await conn.execute(delete(TurnEvent).where(TurnEvent.turn_id == turn_id))
        await conn.execute(insert(TurnEvent), [
            {"tenant_id": tenant, "turn_id": turn_id, "seq": e["seq"], "type": e["type"],
             "data": orjson.dumps(e).decode()} for e in events
        ])  # fmt: skip
        await conn.execute(update(Turn).where(Turn.id == turn_id).values(last_seq=events[-1]["seq"]))


@dataclass
class HandOverApp:
    """The real app, except that the first new turn is answered as a hand-over cut it (see the module)."""

    app: ASGIApp
    sql: AsyncEngine
    plan: HandOver = field(default_factory=HandOver)
    result: HandedOver | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        new_turn = scope["type"] == "http" and scope["method"] == "POST" and NEW_TURN.match(scope["path"])
        if not new_turn or self.result is not None:
            await self.app(scope, receive, send)
            return
        body = bytearray()
        status = 500

        async def keep(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))

        await self.app(scope, receive, keep)
        if status != 200:
            await _answer(send, status, bytes(body), b"application/problem+json")
            return
        turn_id = re.search(rb'"turn_id":"([^"]+)"', body)
        assert turn_id is not None, body
        events = await stored_events(self.sql, turn_id.group(1).decode())
        assert events[-1]["type"] == "turn.ended", events
        self.result = handed_over(events, self.plan)
        await store_log(self.sql, self.result.stored)
        if self.plan.died:  # the response never completes: uvicorn drops the connection
            await _answer(send, 200, sse(self.result.shown), b"text/event-stream", more_body=True)
            return
        await _answer(send, 200, sse(self.result.shown) + f"retry: {RETRY_MS}\n\n".encode(), b"text/event-stream")


async def _answer(send: Send, status: int, body: bytes, media_type: bytes, *, more_body: bool = False) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", media_type)]})
    await send({"type": "http.response.body", "body": body, "more_body": more_body})
