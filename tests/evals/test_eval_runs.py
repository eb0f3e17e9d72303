"""Eval runs end to end: each item a governed turn in a hidden session, recorded tools that never
run (a real MCP server counts the calls), an unrecorded call refused with a receipt, a baseline
compared, cancel, isolation — on PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from app.models import EvalRun
from app.settings import EvalSettings, McpGatewaySettings
from tests.conftest import TokenFactory, make_settings, running_app
from tests.factories import create_agent, create_session
from tests.integrations.conftest import TEAM, build_gateway_server
from tests.mcp_server import Gateway, serve_gateway

JSON = {"Accept": "application/json"}
DEADLINE = 60.0


@pytest.fixture(scope="module")
def recording_gateway() -> Iterator[Gateway]:
    with serve_gateway(build_gateway_server, team=TEAM) as gateway:
        yield gateway


@pytest.fixture(params=["postgresql", "sqlite"])
async def evals_app(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path, recording_gateway: Gateway
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'app.db'}"
    settings = make_settings(
        url,
        tmp_path,
        mcp_gateway=McpGatewaySettings(url=recording_gateway.url, timeout_seconds=30.0),
        evals=EvalSettings(poll_seconds=0.2),
    )
    async with running_app(settings) as (app, client):
        recording_gateway.clear()
        yield app, client


@pytest.fixture
def evals_client(evals_app: tuple[FastAPI, httpx.AsyncClient]) -> httpx.AsyncClient:
    return evals_app[1]


def _config(*steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": {"provider": "scripted", "script": list(steps)},
        "system_prompt": "You file issues.",
        "tools": ["mcp:github", "builtin:echo"],
        "context": {"team_unit": TEAM},
    }


FILE_BUG = {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": "bug"}}]}


async def _recorded_dataset(client: httpx.AsyncClient, headers: dict[str, str], agent_id: str) -> dict[str, Any]:
    session = await create_session(client, headers, agent_id)
    turn = await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "file a bug"}, headers={**headers, **JSON}
    )
    assert turn.json()["status"] == "completed", turn.text
    dataset = (await client.post("/datasets", json={"name": "bugs"}, headers=headers)).json()
    made = await client.post(
        f"/datasets/{dataset['id']}/items:from-sessions", json={"session_ids": [session["id"]]}, headers=headers
    )
    assert made.status_code == 201, made.text
    return dict(dataset)


async def _new_version(
    client: httpx.AsyncClient, headers: dict[str, str], agent_id: str, config: dict[str, Any]
) -> int:
    response = await client.patch(f"/agents/{agent_id}", json={"config": config}, headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["version"])


async def _ended(client: httpx.AsyncClient, headers: dict[str, str], eval_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        run = (await client.get(f"/evals/{eval_id}", headers=headers)).json()
        if run["status"] in ("completed", "cancelled", "failed"):
            return dict(run)
        await asyncio.sleep(0.1)
    raise AssertionError(f"eval {eval_id} did not end: {run}")


async def test_recorded_tools_answer_every_call_and_nothing_runs(
    evals_client: httpx.AsyncClient, alice: dict[str, str], recording_gateway: Gateway
) -> None:
    client = evals_client
    agent = await create_agent(client, alice, _config(FILE_BUG, {"text": "opened bug"}))
    dataset = await _recorded_dataset(client, alice, agent["id"])
    assert len(recording_gateway.calls) == 1
    recording_gateway.clear()
    v2 = await _new_version(client, alice, agent["id"], _config(FILE_BUG, {"text": "v2 opened the bug"}))
    started = await client.post(
        "/evals",
        json={"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": v2, "baseline_version": 1,
              "tools": "recorded", "concurrency": 2},
        headers=alice,
    )  # fmt: skip
    assert started.status_code == 202, started.text
    assert started.headers["Location"] == f"/evals/{started.json()['id']}"
    run = await _ended(client, alice, started.json()["id"])
    assert run["status"] == "completed"
    assert run["progress"] == {"total": 2, "done": 2}
    assert recording_gateway.rpc("tools/call") == []
    assert recording_gateway.calls == []
    items = (await client.get(f"/evals/{run['id']}/items", headers=alice)).json()["items"]
    assert [(i["agent_version"], i["turn_status"]) for i in items] == [(1, "completed"), (v2, "completed")]
    baseline, candidate = items
    assert baseline["scores"][0]["type"] == "reference"
    assert baseline["score"] == 1.0
    assert 0 < candidate["score"] < 1
    assert run["summary"]["comparison"]["losses"] == 1
    assert run["summary"]["comparison"]["changed"][0]["position"] == 1
    events = (await client.get(f"/turns/{candidate['turn_id']}/events", headers=alice)).text
    assert "created issue: bug" in events
    receipts = (await client.get(f"/turns/{candidate['turn_id']}/decisions", headers=alice)).json()["items"]
    assert [(r["point"], r["verdict"]) for r in receipts if r["point"] == "tool"] == [("tool", "allow")]
    listed = (await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]
    assert len(listed) == 1, "eval sessions are hidden from session lists"


async def test_an_unrecorded_call_is_refused_with_a_receipt_and_never_runs(
    evals_client: httpx.AsyncClient, alice: dict[str, str], recording_gateway: Gateway
) -> None:
    client = evals_client
    agent = await create_agent(client, alice, _config(FILE_BUG, {"text": "opened bug"}))
    dataset = await _recorded_dataset(client, alice, agent["id"])
    recording_gateway.clear()
    other = {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": "another"}}]}
    v2 = await _new_version(client, alice, agent["id"], _config(other, {"text": "tried"}))
    started = await client.post(
        "/evals", json={"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": v2}, headers=alice
    )
    run = await _ended(client, alice, started.json()["id"])
    assert recording_gateway.rpc("tools/call") == []
    (item,) = (await client.get(f"/evals/{run['id']}/items", headers=alice)).json()["items"]
    receipts = (await client.get(f"/turns/{item['turn_id']}/decisions", headers=alice)).json()["items"]
    tool = [r for r in receipts if r["point"] == "tool"]
    assert [(r["verdict"], r["rule_id"]) for r in tool] == [("deny", "eval_unrecorded_tool")]
    events = (await client.get(f"/turns/{item['turn_id']}/events", headers=alice)).text
    assert "no recorded result" in events


async def test_checks_score_and_a_live_run_runs_the_tools(
    evals_client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    client = evals_client
    agent = await create_agent(
        client, alice, _config({"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "said hi"})
    )
    checks = [
        {"type": "contains", "value": "hi"},
        {"type": "equals", "value": "something else"},
        {"type": "tool_calls", "calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
    ]
    dataset = (await client.post("/datasets", json={"name": "live", "items": [{"input": "greet", "expected": checks}]},
                                 headers=alice)).json()  # fmt: skip
    started = await client.post(
        "/evals", json={"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": 1, "tools": "live"},
        headers=alice,
    )  # fmt: skip
    run = await _ended(client, alice, started.json()["id"])
    figures = run["summary"]["candidate"]
    assert figures["checks"]["contains"]["pass_rate"] == 1.0
    assert figures["checks"]["equals"]["pass_rate"] == 0.0
    assert figures["checks"]["tool_calls"]["pass_rate"] == 1.0
    assert figures["mean_score"] == pytest.approx(2 / 3, abs=1e-3)
    assert figures["latency_ms"]["p50"] is not None
    assert figures["tokens"] > 0


async def test_bad_runs_are_refused_and_runs_are_their_owners(
    evals_client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    client = evals_client
    agent = await create_agent(client, alice, _config({"text": "ok"}))
    dataset = (await client.post("/datasets", json={"name": "one", "items": [{"input": "x"}]}, headers=alice)).json()
    base = {"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": 1}
    for body, status, field in (
        ({**base, "agent_version": 9}, 422, "agent_version"),
        ({**base, "baseline_version": 1}, 422, "baseline_version"),
        ({**base, "concurrency": 17}, 422, "concurrency"),
        ({**base, "tools": "sometimes"}, 422, "tools"),
    ):
        response = await client.post("/evals", json=body, headers=alice)
        assert response.status_code == status, response.text
        assert field in response.json()["errors"][0]["loc"]
    stranger = auth_headers("another-tenant", "alice", roles=["admin"])
    assert (await client.post("/evals", json=base, headers=stranger)).status_code == 404
    run = (await client.post("/evals", json=base, headers=alice)).json()
    for other in (stranger, auth_headers(tenant, "bob")):
        assert (await client.get(f"/evals/{run['id']}", headers=other)).status_code == 404
        assert (await client.get(f"/evals/{run['id']}/items", headers=other)).status_code == 404
        assert (await client.post(f"/evals/{run['id']}/cancel", headers=other)).status_code == 404
    await _ended(client, alice, run["id"])
    assert (await client.post(f"/evals/{run['id']}/cancel", headers=alice)).status_code == 409


async def test_cancel_stops_the_run_and_its_turns(evals_client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    client = evals_client
    words = " ".join(["word"] * 200)
    slow = {
        "model": {"provider": "scripted", "script": [{"text": words}], "chunk_delay_ms": 50},
        "system_prompt": "slow",
    }
    agent = await create_agent(client, alice, slow)
    items = [{"input": f"q{i}"} for i in range(6)]
    dataset = (await client.post("/datasets", json={"name": "slow", "items": items}, headers=alice)).json()
    run = (await client.post("/evals", json={"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": 1,
                                             "concurrency": 1}, headers=alice)).json()  # fmt: skip
    deadline = time.monotonic() + DEADLINE
    while not (await client.get(f"/evals/{run['id']}/items", headers=alice)).json()["items"]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    cancelled = await client.post(f"/evals/{run['id']}/cancel", headers=alice)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    deadline = time.monotonic() + DEADLINE
    while True:
        listed = (await client.get(f"/evals/{run['id']}/items", headers=alice)).json()["items"]
        turns = [(await client.get(f"/turns/{i['turn_id']}", headers=alice)).json() for i in listed]
        if all(t["status"] not in ("running", "queued") for t in turns) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert len(listed) < 6
    assert {t["status"] for t in turns} <= {"cancelled", "completed"}
    assert "cancelled" in {t["status"] for t in turns}


async def test_a_run_whose_runner_died_is_continued_and_each_item_runs_once(
    evals_app: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    """The runner's lease is taken away mid-run (as when its replica dies): the next pass claims the
    run and scores the rest; no item gets a second result row or a second turn."""
    app, client = evals_app
    text = " ".join(["word"] * 20)
    agent = await create_agent(client, alice, {"model": {"provider": "scripted", "script": [{"text": text}],
                                                         "chunk_delay_ms": 20}, "system_prompt": "x"})  # fmt: skip
    items = [{"input": f"q{i}", "expected": [{"type": "contains", "value": "word"}]} for i in range(4)]
    dataset = (await client.post("/datasets", json={"name": "crash", "items": items}, headers=alice)).json()
    run = (await client.post("/evals", json={"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": 1,
                                             "concurrency": 1}, headers=alice)).json()  # fmt: skip
    deadline = time.monotonic() + DEADLINE
    while (await client.get(f"/evals/{run['id']}", headers=alice)).json()["progress"]["done"] < 1:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    async with app.state.container.session_factory() as db, db.begin():
        await db.execute(update(EvalRun).where(EvalRun.id == uuid.UUID(run["id"])).values(runner_id=uuid.uuid4()))
    ended = await _ended(client, alice, run["id"])
    assert ended["status"] == "completed"
    assert ended["progress"] == {"total": 4, "done": 4}
    listed = (await client.get(f"/evals/{run['id']}/items", headers=alice)).json()["items"]
    assert sorted(i["position"] for i in listed) == [1, 2, 3, 4]
    assert len({i["turn_id"] for i in listed}) == 4
    assert all(i["score"] == 1.0 for i in listed)
