"""A running turn whose replica dies or drains continues on another replica (two app instances, one PostgreSQL).

A replica "dies" the way a SIGKILL leaves things (`die`): its run stops writing at once (the fence's
`ABANDON`), it stops heartbeating and its advisory-lock connection closes; its heartbeat is set a
little older than two beats, so only the free lock says it is gone. The shared test app drains
meanwhile (a draining replica takes no turns), so the replica under test is the one that continues.
Tools run on a real MCP server on loopback that records every call with its idempotency key.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.main import create_app
from app.models import Runner, Turn, TurnEvent
from app.models.base import utcnow
from app.runtime.manager import TurnManager
from app.runtime.store.runners import STALE_SECONDS, lock_key
from app.runtime.stream import TurnStream
from app.settings import McpGatewaySettings
from tests.approvals.helpers import GATE_CALCULATOR
from tests.conftest import TokenFactory, make_settings
from tests.factories import create_agent, create_session, scripted_config
from tests.mcp_server import Gateway, serve_gateway
from tests.sse import Frame, iter_frames, parse, read_turn
from tests.turns.loopback import serve_asgi
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session, wait_for_status
from tests.usage.support import put_limits

T = TypeVar("T")
TEAM = "eng"
WORDS = " ".join(f"w{i}" for i in range(40))
GATE_ISSUES = {**GATE_CALCULATOR, "id": "issues-need-a-human", "tool": "github__create_issue"}
MCP_TOOLS = {"tools": ["mcp:github", "builtin:calculator"], "context": {"team_unit": TEAM}}
THREE_ISSUES = {
    "tool_calls": [
        {"name": "github__create_issue", "arguments": {"title": "one"}},
        {"name": "github__create_issue", "arguments": {"title": "two"}},
        {"name": "github__create_issue", "arguments": {"title": "three"}},
    ]
}


class Hold:
    """Keeps the MCP tool call for a title waiting (on the server's thread) until released."""

    def __init__(self) -> None:
        self.title: str | None = None
        self.reached = threading.Event()
        self.release = threading.Event()

    def reset(self, title: str | None) -> None:
        self.title = title
        self.reached.clear()
        self.release.clear()


def build_server(gateway: Gateway, hold: Hold) -> MCPServer:
    server = MCPServer("continuation-gateway")

    @server.tool(name="github__create_issue", description="Open an issue")
    async def create_issue(title: str, ctx: Context) -> str:
        gateway.calls.append((title, (ctx.headers or {}).get("x-idempotency-key")))
        if title == hold.title:
            hold.reached.set()
            while not hold.release.is_set():
                await asyncio.sleep(0.02)
        return f"created issue: {title}"

    return server


@pytest.fixture(scope="module")
def hold() -> Hold:
    return Hold()


@pytest.fixture(scope="module")
def mcp(hold: Hold) -> Iterator[Gateway]:
    with serve_gateway(lambda gateway: build_server(gateway, hold), team=TEAM) as gateway:
        yield gateway


@pytest.fixture
def gateway(mcp: Gateway, hold: Hold) -> Iterator[Gateway]:
    mcp.clear()
    hold.reset(None)
    try:
        yield mcp
    finally:
        hold.release.set()


@pytest.fixture
def quiet_shared_app(app: FastAPI) -> Iterator[None]:
    """The session's shared app drains while a test runs: it continues nobody's turns."""
    manager: TurnManager = app.state.container.turns
    manager.draining = True
    try:
        yield
    finally:
        manager.draining = False


async def replica(
    database_url: str, data_dir: Path, gateway: Gateway
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """A replica served on loopback (true streaming: a stream is cut mid-way)."""
    gateway_settings = McpGatewaySettings(url=gateway.url, timeout_seconds=10)
    app = create_app(make_settings(database_url, data_dir, mcp_gateway=gateway_settings))
    async with serve_asgi(app, lifespan="on") as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        yield app, client


def _replica_fixture(name: str) -> Any:
    @pytest.fixture(name=name)
    async def fixture(
        database_url: str, tmp_path: Path, gateway: Gateway, quiet_shared_app: None
    ) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
        async for pair in replica(database_url, tmp_path / name, gateway):
            yield pair

    return fixture


first = _replica_fixture("first")
second = _replica_fixture("second")
third = _replica_fixture("third")


def manager_of(app: FastAPI) -> TurnManager:
    manager: TurnManager = app.state.container.turns
    return manager


async def die(app: FastAPI, sql: AsyncEngine) -> None:
    """What a SIGKILL leaves: nothing more written, no heartbeat, the lock connection gone."""
    manager = manager_of(app)
    manager.draining = True
    await manager.abandon()
    await look_dead(app, sql)


async def look_dead(app: FastAPI, sql: AsyncEngine) -> None:
    """What a network partition leaves: the replica's runs go on, but its heartbeat and lock are gone."""
    manager = manager_of(app)
    await manager.lease.stop(deregister=False)
    async with sql.begin() as conn:
        await conn.execute(
            update(Runner)
            .where(Runner.id == manager.runner_id)
            .values(heartbeat_at=utcnow() - timedelta(seconds=STALE_SECONDS + 1))
        )


async def session_with(client: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **extra: Any) -> str:
    agent = await create_agent(client, headers, scripted_config(*steps, **extra))
    return str((await create_session(client, headers, agent["id"]))["id"])


async def frames_until(frames: AsyncIterator[Frame], event: str) -> list[Frame]:
    """Frames up to the first `event` (the rest stay in `frames`)."""
    seen: list[Frame] = []
    async for frame in frames:
        seen.append(frame)
        if frame.event == event:
            break
    return seen


def after_drop_rule(frames: list[Frame]) -> list[Frame]:
    """What a client keeps of a replay: without the events a `turn.resumed` says did not survive."""
    kept: list[Frame] = []
    for frame in frames:
        if frame.event == "turn.resumed":
            kept = [f for f in kept if f.id <= frame.data["last_durable_seq"]]
        kept.append(frame)
    return kept


def assert_gapless(frames: list[Frame]) -> None:
    """Ids increase by one, but across a `turn.resumed` (its run numbers above the lost run's ceiling)."""
    for before, after in zip(frames, frames[1:], strict=False):
        assert after.id == before.id + 1 or after.event == "turn.resumed", (before, after)


async def interrupted_talk(
    client: httpx.AsyncClient, headers: dict[str, str], interrupt: Callable[[str], Awaitable[T]]
) -> tuple[str, T]:
    """A turn streaming `WORDS` slowly, read raw on `client` to its end; `interrupt(turn_id)` runs
    after its third `message.delta`."""
    session = (await slow_session(client, headers, text=WORDS, delay_ms=40))["id"]
    async with client.stream("POST", f"/sessions/{session}/turns", json={"input": "talk"}, headers=headers) as response:
        raw, chunks = "", response.aiter_text()
        async for chunk in chunks:
            raw += chunk
            if raw.count("event: message.delta") >= 3:
                break
        interrupted = await interrupt(parse(raw)[0].data["turn_id"])
        async for chunk in chunks:
            raw += chunk
    return raw, interrupted


async def continued_on(
    app: FastAPI, client: httpx.AsyncClient, headers: dict[str, str], turn_id: str
) -> tuple[dict[str, Any], list[Frame]]:
    """`app` continues the dead replica's turn (its sweep, run now; its own beat may have got there
    first): the turn once it ended, and its stored stream."""
    await manager_of(app).recover()
    turn = await wait_for_status(client, headers, turn_id)
    return turn, await replay(client, headers, turn_id)


async def replay(client: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> list[Frame]:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        return await read_turn(client, "GET", f"/turns/{turn_id}/events", headers=headers)


def calls_by_title(gateway: Gateway) -> dict[str, list[str | None]]:
    seen: dict[str, list[str | None]] = {}
    for title, key in gateway.calls:
        seen.setdefault(title, []).append(key)
    return seen


async def test_a_tool_batch_continues_without_running_a_completed_call_twice(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    gateway: Gateway,
    hold: Hold,
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, second_client) = first, second
    session = await session_with(first_client, alice, THREE_ISSUES, {"text": "filed them"}, **MCP_TOOLS)
    hold.reset("two")
    async with first_client.stream(
        "POST", f"/sessions/{session}/turns", json={"input": "file"}, headers=alice
    ) as response:
        seen = await frames_until(iter_frames(response), "tool_call.completed")  # "one" completed
        turn_id = seen[0].data["turn_id"]
        assert await asyncio.to_thread(hold.reached.wait, POLL_TIMEOUT_SECONDS), "the call left"
        await die(first_app, sql)
    hold.reset(None)

    turn, frames = await continued_on(second_app, second_client, alice, turn_id)

    assert (turn["status"], turn["final_output"]) == ("completed", "filed them")
    calls = calls_by_title(gateway)
    assert len(calls["one"]) == 1, "a completed call never runs again"
    assert len(calls["two"]) == 2, "the dispatched call is sent again"
    assert calls["two"][0] == calls["two"][1], "under the same idempotency key"
    assert len(calls["three"]) == 1
    kept = after_drop_rule(frames)
    assert_gapless(kept)
    [resumed] = [f for f in kept if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "replica_lost"
    assert resumed.data["from_loop"] == 0
    assert [f.event for f in kept].count("turn.ended") == 1
    completed = [f.data["tool_call_id"] for f in kept if f.event == "tool_call.completed"]
    assert sorted(completed) == sorted(set(completed)), "each call's outcome is in the stream once"
    assert len(completed) == 3
    decisions = [f.data["tool_call_id"] for f in kept if f.event == "policy.decision" and f.data["point"] == "tool"]
    assert sorted(decisions) == sorted(set(decisions)), "a call is judged once, before it is first sent"


async def test_a_streaming_model_call_is_made_again_above_the_lost_ids(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, second_client) = first, second
    session = (await slow_session(first_client, alice, text=WORDS, delay_ms=40))["id"]
    async with first_client.stream(
        "POST", f"/sessions/{session}/turns", json={"input": "talk"}, headers=alice
    ) as response:
        seen: list[Frame] = []
        async for frame in iter_frames(response):
            seen.append(frame)
            if sum(f.event == "message.delta" for f in seen) == 5:
                break
        turn_id = seen[0].data["turn_id"]
        await die(first_app, sql)
    async with sql.connect() as conn:
        ceiling = await conn.scalar(select(Turn.seq_ceiling).where(Turn.id == uuid.UUID(turn_id)))
        stored = await conn.scalar(select(func.max(TurnEvent.seq)).where(TurnEvent.turn_id == uuid.UUID(turn_id)))

    turn, frames = await continued_on(second_app, second_client, alice, turn_id)

    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    assert resumed.id == ceiling + 1, "the continuation numbers above every id the lost run may have shown"
    assert resumed.data["last_durable_seq"] == (stored or 0)
    assert (resumed.data["reason"], resumed.data["from_loop"]) == ("replica_lost", 0)
    assert max(f.id for f in seen) <= ceiling
    reconnected = seen + [f for f in frames if f.id > seen[-1].id]  # the client reconnects after what it saw
    kept = after_drop_rule(reconnected)
    assert_gapless(kept)
    assert [f.data["text"] for f in kept if f.event == "message.completed"] == [WORDS]
    assert "".join(f.data["text"] for f in kept[kept.index(resumed) :] if f.event == "message.delta") == WORDS
    assert [f.event for f in kept].count("turn.ended") == 1
    assert [f.event for f in kept].count("policy.decision") == 1, "the input is judged once"


async def test_an_approved_call_with_edited_arguments_is_sent_again_as_approved(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    gateway: Gateway,
    hold: Hold,
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, second_client) = first, second
    ask = {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": "asked"}}]}
    session = await session_with(first_client, alice, ask, {"text": "filed"}, policies=[GATE_ISSUES], **MCP_TOOLS)
    started = await read_turn(first_client, "POST", f"/sessions/{session}/turns", json={"input": "file"}, headers=alice)
    turn_id = started[0].data["turn_id"]
    [required] = [f for f in started if f.event == "approval.required"]
    hold.reset("edited")
    decision = {"decision": "approve", "arguments": {"title": "edited"}}
    url = f"/approvals/{required.data['approval_id']}"
    async with first_client.stream("POST", url, json=decision, headers=alice) as response:
        assert response.status_code == 200
        assert await asyncio.to_thread(hold.reached.wait, POLL_TIMEOUT_SECONDS), "the call left"
        await die(first_app, sql)
    hold.reset(None)

    turn, _ = await continued_on(second_app, second_client, alice, turn_id)
    approvals = (await second_client.get("/approvals", headers=alice)).json()["items"]

    assert (turn["status"], turn["final_output"]) == ("completed", "filed")
    calls = calls_by_title(gateway)
    assert "asked" not in calls, "the arguments the human replaced never ran"
    assert len(calls["edited"]) == 2
    assert calls["edited"][0] == calls["edited"][1], "re-sent under the same key"
    assert [a["id"] for a in approvals if a["turn_id"] == turn_id] == [required.data["approval_id"]]


async def test_two_live_replicas_sweeping_one_orphan_continue_it_once(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    third: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, second_client), (third_app, _) = first, second, third
    session = (await slow_session(first_client, alice, text=WORDS, delay_ms=40))["id"]
    async with first_client.stream(
        "POST", f"/sessions/{session}/turns", json={"input": "talk"}, headers=alice
    ) as response:
        seen = await frames_until(iter_frames(response), "message.delta")
        await die(first_app, sql)
    turn_id = seen[0].data["turn_id"]

    swept = await asyncio.gather(manager_of(second_app).recover(), manager_of(third_app).recover())
    await wait_for_status(second_client, alice, turn_id)
    frames = await replay(second_client, alice, turn_id)

    assert sum(swept) <= 1
    assert [f.event for f in frames].count("turn.resumed") == 1, "exactly one replica continued it"
    assert [f.event for f in frames].count("turn.ended") == 1


async def test_a_live_replicas_turn_is_never_claimed_even_when_its_lock_connection_drops(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, _) = first, second
    lease = manager_of(first_app).lease
    session = (await slow_session(first_client, alice, text=WORDS, delay_ms=40))["id"]
    async with first_client.stream(
        "POST", f"/sessions/{session}/turns", json={"input": "talk"}, headers=alice
    ) as response:
        frames = iter_frames(response)
        seen = await frames_until(frames, "message.delta")
        turn_id = uuid.UUID(seen[0].data["turn_id"])
        assert await manager_of(second_app).recover() == 0, "lock held, heartbeat fresh"
        await drop_lock_connection(sql, lease.runner_id)
        await lease.heartbeat()
        assert await manager_of(second_app).recover() == 0, "lock free, but the heartbeat is fresh"
        assert await lease.hold_lock(), "the replica takes its lock again"
        async with sql.connect() as conn:
            assert await conn.scalar(select(Turn.runner_id).where(Turn.id == turn_id)) == lease.runner_id
        rest = [frame async for frame in frames]
    assert rest[-1].data["status"] == "completed"


async def test_a_drained_turn_is_handed_over_and_its_followers_told_to_reconnect(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, second_client) = first, second

    async def drain(_: str) -> asyncio.Task[int]:
        return asyncio.create_task(manager_of(first_app).drain(0.1))

    raw, draining = await interrupted_talk(first_client, alice, drain)
    assert await draining >= 1
    seen = parse(raw)
    turn_id = seen[0].data["turn_id"]
    async with sql.connect() as conn:
        row = (
            await conn.execute(
                select(Turn.status, Turn.runner_id, Turn.handed_over).where(Turn.id == uuid.UUID(turn_id))
            )
        ).one()
    turn, frames = await continued_on(second_app, second_client, alice, turn_id)

    assert "\nretry: " in "\n" + raw, "the follower is told to reconnect"
    assert "turn.ended" not in raw
    assert tuple(row) == ("running", None, True), "released, not settled"
    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    assert resumed.data["reason"] == "shutdown"
    assert resumed.data["last_durable_seq"] == seen[-1].id, "everything the follower saw was stored"
    kept = after_drop_rule(frames)
    assert_gapless(kept)
    assert [f.event for f in kept].count("turn.ended") == 1
    assert [f.data["text"] for f in kept if f.event == "message.completed"] == [WORDS]


async def drop_lock_connection(sql: AsyncEngine, runner_id: uuid.UUID) -> None:
    """Close the connection that holds a runner's advisory lock, from the server's side, and wait until it is gone."""
    key = lock_key(runner_id) & 0xFFFFFFFFFFFFFFFF
    async with sql.connect() as conn:
        pid = await conn.scalar(
            text(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory'"
                " AND classid = :high AND objid = :low AND objsubid = 1"
            ),
            {"high": key >> 32, "low": key & 0xFFFFFFFF},
        )
        assert pid is not None
        # with a timeout the call returns once the backend is gone (and its lock free), not when signalled
        gone = await conn.scalar(text("SELECT pg_terminate_backend(:pid, :wait_ms)"), {"pid": pid, "wait_ms": 30_000})
        assert gone, "the lock's backend outlived its termination by 30 s"
        await conn.commit()


async def test_a_replica_whose_running_turn_was_claimed_stores_none_of_its_late_events(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    alice: dict[str, str],
    sql: AsyncEngine,
) -> None:
    (first_app, first_client), (second_app, second_client) = first, second

    async def claim_behind_its_back(turn_id: str) -> TurnStream:
        run = manager_of(first_app).live(uuid.UUID(turn_id))
        assert run is not None
        await look_dead(first_app, sql)  # its run streams on, unaware
        assert await manager_of(second_app).recover() == 1
        return run

    raw, lost_run = await interrupted_talk(first_client, alice, claim_behind_its_back)  # read to the fence's stop
    turn_id = parse(raw)[0].data["turn_id"]
    await manager_of(first_app).wait(uuid.UUID(turn_id))
    turn, frames = await continued_on(second_app, second_client, alice, turn_id)

    [resumed] = [f for f in frames if f.event == "turn.resumed"]
    stored_at_claim = resumed.data["last_durable_seq"]
    assert lost_run.last_seq > stored_at_claim, "the first run went on emitting after the claim"
    assert [f.id for f in frames if f.id < resumed.id] == list(range(1, stored_at_claim + 1)), (
        "none of its late events is stored"
    )
    assert lost_run.handed_over, "it stopped where it was"
    assert "\nretry: " in "\n" + raw, "its follower is told to reconnect"
    assert "turn.ended" not in raw
    assert (turn["status"], turn["final_output"]) == ("completed", WORDS)
    kept = after_drop_rule(frames)
    assert_gapless(kept)
    assert [f.event for f in kept].count("turn.ended") == 1
    assert [f.data["text"] for f in kept if f.event == "message.completed"] == [WORDS]


async def test_a_drained_model_call_leaves_the_quota_ledger_settled_to_the_turns_usage(
    first: tuple[FastAPI, httpx.AsyncClient],
    second: tuple[FastAPI, httpx.AsyncClient],
    tenant: str,
    alice: dict[str, str],
    auth_headers: TokenFactory,
) -> None:
    """A hand-over is not a death: the cut call's reservation settles to what it streamed, by the
    hand-over's write, and the continuing run's call reserves and settles its own."""
    (first_app, first_client), (second_app, second_client) = first, second
    await put_limits(
        first_client, auth_headers(tenant, "root", ["admin"]), token_quota={"period": "day", "tokens": 100_000}
    )

    async def drain(_: str) -> asyncio.Task[int]:
        return asyncio.create_task(manager_of(first_app).drain(0.1))

    raw, draining = await interrupted_talk(first_client, alice, drain)
    assert await draining >= 1
    turn, _ = await continued_on(second_app, second_client, alice, parse(raw)[0].data["turn_id"])

    assert turn["status"] == "completed"
    quota = (await second_client.get("/usage", headers=alice)).json()["quota"]
    assert (quota["used"], quota["reserved"]) == (turn["usage"]["input_tokens"] + turn["usage"]["output_tokens"], 0)
