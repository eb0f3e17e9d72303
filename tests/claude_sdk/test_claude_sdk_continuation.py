"""A running Claude SDK turn whose replica dies or drains continues where Claude Code's transcript is
(app/claude_sdk/opening.py).

Two app instances on one PostgreSQL: the first dies the way the engine's continuation tests make it
die (`die`: nothing more written, no heartbeat, its lock connection gone), and its Claude Code
process goes with it — or it drains and hands the turn over; the second continues the turn. Sharing
the first's `DATA_DIR` it is the same replica restarted (or a replica on a shared folder): it has the
transcript and continues; with a `DATA_DIR` of its own it has not, and the turn fails `server_restarted`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import McpGatewaySettings, Settings
from tests.claude_sdk.conftest import sdk_settings_for
from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, turn
from tests.conftest import TokenFactory, running_app
from tests.idempotent_gateway import IdempotentGateway, fresh, serve_idempotent_gateway, wait_reached
from tests.runtime.test_continuation import (
    after_drop_rule,
    assert_gapless,
    continued_on,
    die,
    manager_of,
    quiet_shared_app,
)
from tests.turns.support import POLL_TIMEOUT_SECONDS
from tests.usage.support import put_limits

__all__ = ["quiet_shared_app"]

TEAM = "eng"
CREATE = "mcp__agent__github__create_issue"


@pytest.fixture(scope="module")
def idempotent() -> Iterator[IdempotentGateway]:
    with serve_idempotent_gateway(team=TEAM) as served:
        yield served


@pytest.fixture
def gateway(idempotent: IdempotentGateway) -> Iterator[IdempotentGateway]:
    with fresh(idempotent) as served:
        yield served


@contextlib.asynccontextmanager
async def replica(settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    async with running_app(settings) as pair:
        yield pair


async def running_turn(client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> str:
    listed = (await client.get(f"/sessions/{session_id}/turns", headers=headers)).json()["items"]
    (active,) = [t for t in listed if t["status"] == "running"]
    return str(active["id"])


async def crash(app: FastAPI, sql: AsyncEngine, running: asyncio.Task[Any]) -> None:
    """Kill the replica mid-turn (its Claude Code process too); its client's request goes with it."""
    await die(app, sql)
    await app.state.container.claude_sdk.pool.close_all()
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
        await running


async def sent_calls(gateway: IdempotentGateway, count: int) -> None:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while len(gateway.gateway.rpc("tools/call")) < count:
            await asyncio.sleep(0.02)


def loop_messages(anthropic: MockAnthropic) -> str:
    return json.dumps(anthropic.loop_requests()[-1]["messages"])


@pytest.mark.parametrize("stop", ["crash", "drain"])
async def test_a_model_call_cut_by_its_replicas_stop_is_made_again_from_the_entry_before_its_prompt(
    database_url: str, tmp_path: Path, anthropic: MockAnthropic, alice: dict[str, str], sql: AsyncEngine,
    quiet_shared_app: None, stop: str,
) -> None:  # fmt: skip
    """A crash (`replica_lost`), or a drain that hands the turn over (`shutdown`): the same continuation."""
    held = Step(text="an answer the stop cuts short", hold=asyncio.Event())
    anthropic.play(Step(text="I will remember teapot"), held, Step(text="it was teapot"))
    settings = sdk_settings_for(database_url, tmp_path / "data", anthropic)
    async with replica(settings) as (first_app, first), replica(settings) as (second_app, second):
        session_id = await new_session(first, alice)
        await turn(first, alice, session_id, "remember the word teapot")
        running = asyncio.create_task(turn(first, alice, session_id, "which word?"))
        await asyncio.wait_for(held.holding.wait(), POLL_TIMEOUT_SECONDS)
        turn_id = await running_turn(first, alice, session_id)
        if stop == "crash":
            await crash(first_app, sql, running)
        else:
            assert await manager_of(first_app).drain(0.1) == 1
            handed_over = await running
            assert "turn.ended" not in [f.event for f in handed_over], "a drained run hands its turn over"
        assert held.hold is not None
        held.hold.set()

        _, frames = await continued_on(second_app, second, alice, turn_id)

    kept = after_drop_rule(frames)
    assert_gapless(kept)
    (resumed,) = of(kept, "turn.resumed")
    assert (resumed["reason"], resumed["from_loop"]) == ("replica_lost" if stop == "crash" else "shutdown", 0)
    ended = kept[-1]
    assert (ended.event, ended.data["status"], ended.data["final_output"]) == (
        "turn.ended",
        "completed",
        "it was teapot",
    )
    assert [f.event for f in kept].count("turn.ended") == 1
    sent = loop_messages(anthropic)
    assert sent.count("which word?") == 1, "the prompt is made again, not added a second time"
    assert sent.count("remember the word teapot") == 1
    assert "the stop cuts" not in sent


async def test_a_tool_batch_cut_by_the_crash_is_finished_without_a_second_effect(
    database_url: str, tmp_path: Path, anthropic: MockAnthropic, gateway: IdempotentGateway, alice: dict[str, str],
    sql: AsyncEngine, quiet_shared_app: None,
) -> None:  # fmt: skip
    anthropic.play(
        Step(tool_calls=[(CREATE, {"title": "one"}), (CREATE, {"title": "two"}), (CREATE, {"title": "three"})])
    )
    settings = sdk_settings_for(
        database_url, tmp_path / "data", anthropic, mcp_gateway=McpGatewaySettings(url=gateway.url, timeout_seconds=30)
    )
    held = gateway.effects.hold("two")
    async with replica(settings) as (first_app, first), replica(settings) as (second_app, second):
        session_id = await new_session(first, alice, tools=["mcp:github"], policies=[], context={"team_unit": TEAM})
        running = asyncio.create_task(turn(first, alice, session_id, "file three issues"))
        await wait_reached(held, POLL_TIMEOUT_SECONDS)
        turn_id = await running_turn(first, alice, session_id)
        await crash(first_app, sql, running)
        anthropic.play(Step(text="filed them"))
        recovery = asyncio.create_task(continued_on(second_app, second, alice, turn_id))
        await sent_calls(gateway, 3)  # "one", "two", and "two" again: it was out when the replica died
        gateway.effects.release("two")

        _, frames = await recovery

    kept = after_drop_rule(frames)
    assert_gapless(kept)
    (resumed,) = of(kept, "turn.resumed")
    assert resumed["reason"] == "replica_lost"
    ended = kept[-1].data
    assert (ended["status"], ended["final_output"]) == ("completed", "filed them")
    assert sorted(gateway.effects.per_key().values()) == [1, 1, 1], "every call's effect happened once"
    requested = {r["arguments"]["title"]: r["tool_call_id"] for r in of(kept, "tool_call.requested")}
    completed = [(c["tool_call_id"], c["result"]) for c in of(kept, "tool_call.completed")]
    assert sorted(completed) == sorted((requested[t], f"created issue: {t}") for t in ("one", "two", "three"))
    sends = [seen.idempotency_key for seen in gateway.gateway.rpc("tools/call")]
    assert len(sends) == 4, "only the dispatched call is sent again"
    assert len(set(sends)) == 3, "under its key"
    answers = [m for m in anthropic.loop_requests()[-1]["messages"] if m["role"] == "user"]
    results = [b["tool_use_id"] for m in answers if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]  # fmt: skip
    assert sorted(results) == sorted(requested.values()), "Claude Code sees each call answered once"


async def test_a_replica_without_the_transcript_fails_the_turn_server_restarted(
    database_url: str, tmp_path: Path, anthropic: MockAnthropic, alice: dict[str, str], sql: AsyncEngine,
    quiet_shared_app: None,
) -> None:  # fmt: skip
    held = Step(text="an answer the crash cuts short", hold=asyncio.Event())
    anthropic.play(Step(text="hello"), held)
    async with (
        replica(sdk_settings_for(database_url, tmp_path / "first", anthropic)) as (first_app, first),
        replica(sdk_settings_for(database_url, tmp_path / "elsewhere", anthropic)) as (second_app, second),
    ):
        session_id = await new_session(first, alice)
        await turn(first, alice, session_id, "hi")
        running = asyncio.create_task(turn(first, alice, session_id, "and now?"))
        await asyncio.wait_for(held.holding.wait(), POLL_TIMEOUT_SECONDS)
        turn_id = await running_turn(first, alice, session_id)
        await crash(first_app, sql, running)
        assert held.hold is not None
        held.hold.set()

        _, frames = await continued_on(second_app, second, alice, turn_id)

    ended = frames[-1]
    assert (ended.event, ended.data["status"]) == ("turn.ended", "failed")
    assert ended.data["error"]["code"] == "server_restarted"
    assert "transcript" in ended.data["error"]["message"]
    assert len(anthropic.loop_requests()) == 2, "no model call is made where the conversation is not"


async def test_a_drained_model_call_leaves_the_quota_ledger_settled_to_the_turns_usage(
    database_url: str, tmp_path: Path, anthropic: MockAnthropic, tenant: str, alice: dict[str, str],
    auth_headers: TokenFactory, quiet_shared_app: None,
) -> None:  # fmt: skip
    """A hand-over is not a death: the cut call's reservation is settled by the hand-over's write."""
    held = Step(text="an answer the drain cuts short", hold=asyncio.Event())
    anthropic.play(held, Step(text="done"))
    settings = sdk_settings_for(database_url, tmp_path / "data", anthropic)
    async with replica(settings) as (first_app, first), replica(settings) as (second_app, second):
        await put_limits(
            first, auth_headers(tenant, "root", ["admin"]), token_quota={"period": "day", "tokens": 100_000}
        )
        session_id = await new_session(first, alice)
        running = asyncio.create_task(turn(first, alice, session_id, "go"))
        await asyncio.wait_for(held.holding.wait(), POLL_TIMEOUT_SECONDS)
        turn_id = await running_turn(first, alice, session_id)
        assert await manager_of(first_app).drain(0.1) == 1
        await running
        assert held.hold is not None
        held.hold.set()

        ended, _ = await continued_on(second_app, second, alice, turn_id)
        quota = (await second.get("/usage", headers=alice)).json()["quota"]

    assert ended["status"] == "completed"
    assert (quota["used"], quota["reserved"]) == (ended["usage"]["input_tokens"] + ended["usage"]["output_tokens"], 0)
