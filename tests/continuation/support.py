"""What the crash and drain tests share: agents that call the recording gateway, a client that follows a
turn in the background (and notices its replica die), killing a replica at a chosen point, the
client's drop rule, and bounded waits.

Every wait here is a safety net for a loaded machine, never a measure of speed: a test fails when a
condition is not reached at all, not when it is reached slowly.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.drop_rule import withdrawn
from app.tools.ledger_keys import idempotency_key
from tests.factories import create_agent, create_session, scripted_config
from tests.idempotent_gateway import TOOL, IdempotentGateway, wait_reached
from tests.live_server import LiveServer
from tests.sse import Frame, iter_blocks, parse, retry_hints

TEAM = "eng"
WAIT_SECONDS = 60.0
"""How long a condition may take on a loaded 2-core machine (a dead replica is noticed within 10 s)."""
POLL_SECONDS = 0.05
IDS = ("turn_id", "seq", "session_id", "agent_id", "approval_id")
"""Fields that differ between two runs of the same script (ids of rows and of the stream)."""


def issue(title: str) -> dict[str, Any]:
    return {"name": TOOL, "arguments": {"title": title}}


def batch(*titles: str) -> dict[str, Any]:
    """A script step: one model reply asking for one issue per title, in order."""
    return {"tool_calls": [issue(title) for title in titles]}


async def gateway_session(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    *steps: dict[str, Any],
    delay_ms: int = 0,
    policies: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A session on a scripted agent with the gateway's `mcp:github` tools; text streams `delay_ms` a word."""
    config = scripted_config(*steps, tools=["mcp:github", "builtin:calculator"], context={"team_unit": TEAM})
    config["model"]["chunk_delay_ms"] = delay_ms
    if policies:
        config["policies"] = policies
    agent = await create_agent(client, headers, config)
    return await create_session(client, headers, agent["id"])


async def key_in(follower: Follower, session: dict[str, Any], call_id: str) -> str:
    """The idempotency key of a call of the turn `follower` follows (its id comes with the turn's first event)."""
    await follower.until(lambda f: bool(f.frames), "the turn's first event")
    return idempotency_key(session["id"], follower.turn_id, call_id)


class Follower:
    """Reads one SSE response in a task of its own: the frames, the `retry:` hints, and whether the
    connection broke (its replica was killed) or the stream ended."""

    def __init__(self, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> None:
        self.frames: list[Frame] = []
        self.retries: list[int] = []
        self.broken = False
        self.status: int | None = None
        self._task = asyncio.create_task(self._read(client, method, url, **kwargs))

    async def _read(self, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> None:
        try:
            async with client.stream(method, url, **kwargs) as response:
                self.status = response.status_code
                if response.status_code != 200:
                    await response.aread()
                    raise AssertionError(f"{method} {url} answered {response.status_code}: {response.text}")
                async for block in iter_blocks(response):
                    self.frames += parse(block)
                    self.retries += retry_hints(block)
        except httpx.TransportError:
            self.broken = True

    @property
    def last_id(self) -> int:
        return self.frames[-1].id

    @property
    def turn_id(self) -> str:
        return str(self.frames[0].data["turn_id"])

    def of(self, event: str) -> list[Frame]:
        return [frame for frame in self.frames if frame.event == event]

    async def until(self, condition: Callable[[Follower], bool], what: str) -> None:
        """Until `condition(self)` holds; fails if the stream ends first or nothing comes in time."""
        await wait_for(lambda: condition(self) or self._task.done(), what)
        if not condition(self):
            await self.ended()
            raise AssertionError(f"the stream ended before {what}: {[f.event for f in self.frames]}")

    async def ended(self) -> Follower:
        """Until the stream is over (ended, cut by its server, or broken); re-raises what went wrong."""
        async with asyncio.timeout(WAIT_SECONDS):
            await self._task
        return self


def deltas(count: int) -> Callable[[Follower], bool]:
    return lambda follower: len(follower.of("message.delta")) >= count


def seen(event: str) -> Callable[[Follower], bool]:
    return lambda follower: bool(follower.of(event))


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(POLL_SECONDS)


def reconnect(client: httpx.AsyncClient, headers: dict[str, str], before: Follower) -> Follower:
    """Follow the turn on another replica from the last event the client saw (`Last-Event-ID`)."""
    url = f"/turns/{before.turn_id}/events"
    return Follower(client, "GET", url, headers={**headers, "Last-Event-ID": str(before.last_id)})


def start_turn(client: httpx.AsyncClient, headers: dict[str, str], session: dict[str, Any]) -> Follower:
    return Follower(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=headers)


async def until_unready(client: httpx.AsyncClient) -> None:
    """Until the replica says it drains (`/readyz` 503)."""
    async with asyncio.timeout(WAIT_SECONDS):
        while (await client.get("/readyz")).status_code == 200:
            await asyncio.sleep(POLL_SECONDS)


@dataclass
class Out:
    """A call the gateway holds: its title; `key`, the idempotency key it was first sent under."""

    gateway: IdempotentGateway
    title: str

    def __post_init__(self) -> None:
        self.hold = self.gateway.effects.hold(self.title)

    @property
    def key(self) -> str:
        sent = self.gateway.gateway.rpc("tools/call")
        keys = [r.idempotency_key for r in sent if (r.tool_arguments or {}).get("title") == self.title]
        assert keys, f"the call {self.title!r} never reached the gateway"
        assert keys[0] is not None, f"the call {self.title!r} reached the gateway without a key"
        return keys[0]


async def kill(replica: LiveServer, follower: Follower) -> None:
    """SIGKILL the replica the client follows (once the client has seen an event: it reconnects from
    there); its stream breaks without a `turn.ended`."""
    await follower.until(lambda f: bool(f.frames), "a first event")
    replica.kill()
    await follower.ended()
    assert follower.broken, "the killed replica's stream must break, not end"
    assert not follower.of("turn.ended")


async def kill_and_reconnect(
    replica: LiveServer, follower: Follower, survivor: httpx.AsyncClient, headers: dict[str, str]
) -> Follower:
    """Kill the replica the client follows; the client reconnects to `survivor`: its stream, to its end."""
    await kill(replica, follower)
    return await reconnect(survivor, headers, follower).ended()


async def kill_while_out(
    replica: LiveServer, follower: Follower, survivor: httpx.AsyncClient, headers: dict[str, str], out: Out
) -> Follower:
    """Kill the replica while `out`'s call is held at the gateway; the survivor must re-send it under
    its key (the test then lets it through). The survivor's stream, to its end."""
    await wait_reached(out.hold, timeout=WAIT_SECONDS)
    await kill(replica, follower)
    rest = reconnect(survivor, headers, follower)
    await wait_for(lambda: out.gateway.effects.sent(out.key) == 2, "the survivor re-sending the call that was out")
    out.gateway.effects.release(out.title)
    return await rest.ended()


def resumed_on_b(before: Follower, after: Follower) -> dict[str, Any]:
    """The continuation's announcement: the first event B sends after what the client saw."""
    assert not after.broken
    assert after.frames, "B sent nothing"
    first = after.frames[0]
    assert first.event == "turn.resumed", [f.event for f in after.frames[:5]]
    assert first.data["reason"] == "replica_lost"
    assert first.id > before.last_id, "ids are never reused"
    assert first.data["last_durable_seq"] <= before.last_id
    return first.data


def results(frames: list[Frame]) -> dict[str, str]:
    return {f.data["tool_call_id"]: f.data["result"] for f in frames if f.event == "tool_call.completed"}


async def replay(client: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> list[Frame]:
    """The whole stored stream of a finished turn, from its first event."""
    follower = await Follower(client, "GET", f"/turns/{turn_id}/events", headers=headers).ended()
    assert not follower.broken
    return follower.frames


def drop_rule(frames: list[Frame]) -> list[Frame]:
    """What a client keeps of what it was sent: at each `turn.resumed`, the project's drop rule
    (app/core/drop_rule.py) withdraws what the lost run showed and never stored, and its open reply."""
    kept = list(frames)
    for resumed in [f for f in frames if f.event == "turn.resumed"]:
        before = [f for f in kept if f.id < resumed.id]
        lost = withdrawn([f.data for f in before], resumed.data)
        kept = [f for f in kept if f.id not in lost]
    return kept


def assert_gapless(frames: list[Frame]) -> None:
    """Ids strictly increase by one, except where a `turn.resumed` continues after `last_durable_seq`
    (what a replay of the stored log must show)."""
    assert frames[0].id == 1, [f.id for f in frames[:3]]
    for before, after in zip(frames, frames[1:], strict=False):
        expected = after.data["last_durable_seq"] + 1 if after.event == "turn.resumed" else after.id
        assert before.id + 1 == expected, f"gap between {before.id} ({before.event}) and {after.id} ({after.event})"
        assert after.id > before.id


def comparable(frames: list[Frame]) -> list[tuple[str, dict[str, Any]]]:
    """The frames as two runs of one script must agree on them: without ids, `turn.resumed` and the
    text deltas (a model call cut by the crash is made again, so its deltas come twice)."""
    skipped = {"turn.resumed", "message.delta"}
    return [(f.event, {k: v for k, v in f.data.items() if k not in IDS}) for f in frames if f.event not in skipped]


def one_ending(frames: list[Frame]) -> dict[str, Any]:
    endings = [f for f in frames if f.event == "turn.ended"]
    assert len(endings) == 1, [f.event for f in frames]
    assert frames[-1] is endings[0]
    return endings[0].data


LEDGER_OUTCOME = text("SELECT status = 'completed' FROM tool_executions WHERE idempotency_key = :key")
TOOL_RESULT_MESSAGE = text(
    "SELECT count(*) > 0 FROM messages WHERE session_id = :session AND role = 'tool' AND tool_call_id = :call"
)


async def until_stored(engine: AsyncEngine, query: TextClause, params: dict[str, Any], what: str) -> None:
    """Until `query` (one boolean) says the database holds `what`."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        async with engine.connect() as conn:
            if (await conn.execute(query, params)).scalar():
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} was never stored")
        await asyncio.sleep(POLL_SECONDS)


async def ledger_outcome_stored(engine: AsyncEngine, key: str) -> None:
    """Until the ledger holds the outcome of the call sent under `key` (a completed call)."""
    await until_stored(engine, LEDGER_OUTCOME, {"key": key}, f"the outcome of {key}")


async def tool_result_stored(engine: AsyncEngine, session: dict[str, Any], call_id: str) -> None:
    """Until the turn's history holds the result of `call_id` (the model's next call comes after it)."""
    params = {"session": uuid.UUID(session["id"]), "call": call_id}
    await until_stored(engine, TOOL_RESULT_MESSAGE, params, f"the result message of {call_id}")
