"""POST /sessions/{id}/fork on PostgreSQL and SQLite: what a fork keeps, what its first turn's model is
given (exactly the kept messages), what it refuses, and what it never copies (approvals, ledger, usage)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select, update

from app.models import Approval, Session, Summary, ToolExecution, Turn, Usage
from app.models.base import utcnow
from app.sessions.sweeper import SweepLimits, session_sweeper
from tests.branching.conftest import (
    LIFECYCLE,
    MCP_TOOLS,
    Branching,
    messages,
    new_session,
    prompt_of,
    said,
    settled,
    turn,
)
from tests.conftest import TokenFactory

ECHO = {"text": "checking", "tool_calls": [{"name": "echo", "arguments": {"text": "echoed"}}]}
CONVERSATION = (ECHO, {"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"})
"""Turn "first": user, assistant with a tool call, its result, "answer one"; turn "second": user, "answer two"."""


async def _conversation(api: httpx.AsyncClient, headers: dict[str, str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    session = await new_session(api, headers, *CONVERSATION)
    await turn(api, headers, session["id"], "first")
    await turn(api, headers, session["id"], "second")
    items = await messages(api, headers, session["id"])
    assert [m["role"] for m in items] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    return session, items


async def _fork(api: httpx.AsyncClient, headers: dict[str, str], session_id: str, **body: Any) -> httpx.Response:
    return await api.post(f"/sessions/{session_id}/fork", json=body, headers=headers)


async def test_a_fork_keeps_the_history_up_to_each_kind_of_message_and_its_turn_sees_exactly_that(
    branching: Branching, alice: dict[str, str]
) -> None:
    api = branching.client
    origin, items = await _conversation(api, alice)
    points = {"user": 0, "assistant with a tool call": 1, "final answer": 3, "second user": 4, "whole": None}
    for kind, index in points.items():
        body = {} if index is None else {"at_message_id": items[index]["id"]}
        response = await _fork(api, alice, origin["id"], **body)
        assert response.status_code == 201, (kind, response.text)
        fork = response.json()
        assert response.headers["location"] == f"/sessions/{fork['id']}"
        kept = items[: (len(items) if index is None else index + 1)]
        if kind == "assistant with a tool call":
            kept = items[:3]  # its tool result stays with it
        assert fork["forked_from"] == {"session_id": origin["id"], "message_id": kept[-1]["id"]}, kind
        assert (fork["owner"], fork["agent_version"], fork["snapshot"]) == (
            origin["owner"], origin["agent_version"], origin["snapshot"],
        )  # fmt: skip
        copied = await messages(api, alice, fork["id"])
        assert said(copied) == said(kept), kind
        assert [m["turn_id"] for m in copied] == [m["turn_id"] for m in kept], "a copy names the turn that wrote it"

        branching.model.requests.clear()
        frames = await turn(api, alice, fork["id"], "again")
        assert frames[-1].data["status"] == "completed", (kind, frames[-1].data)
        assert prompt_of(branching.model.requests[0]) == [*said(kept), ("user", "again")], kind

    assert said(await messages(api, alice, origin["id"])) == said(items), "the origin is untouched"
    listed = (await api.get(f"/sessions/{origin['id']}", headers=alice)).json()
    assert len(listed["forks"]) == len(points)
    assert listed["forked_from"] is None


async def test_a_fork_of_a_fork_keeps_what_the_first_fork_kept_up_to_its_point(
    branching: Branching, alice: dict[str, str]
) -> None:
    api = branching.client
    origin, items = await _conversation(api, alice)
    first = (await _fork(api, alice, origin["id"], at_message_id=items[3]["id"])).json()
    await turn(api, alice, first["id"], "in the fork")
    first_items = await messages(api, alice, first["id"])
    second = await _fork(api, alice, first["id"], at_message_id=first_items[-1]["id"])
    assert second.status_code == 201, second.text
    assert second.json()["forked_from"] == {"session_id": first["id"], "message_id": first_items[-1]["id"]}
    assert said(await messages(api, alice, second.json()["id"])) == said(first_items)
    assert (await api.get(f"/sessions/{first['id']}", headers=alice)).json()["forks"] == [second.json()["id"]]
    assert (await api.get(f"/sessions/{origin['id']}", headers=alice)).json()["forks"] == [first["id"]]
    listed = (await api.get("/sessions", params={"agent_id": origin["agent_id"]}, headers=alice)).json()["items"]
    assert {s["id"]: s["forks"] for s in listed} == {
        origin["id"]: [first["id"]], first["id"]: [second.json()["id"]], second.json()["id"]: [],
    }  # fmt: skip


async def test_a_fork_while_the_origin_runs_keeps_ended_turns_and_refuses_the_running_one(
    branching: Branching, alice: dict[str, str]
) -> None:
    api = branching.client
    slow = {"text": " ".join(f"w{i}" for i in range(400))}
    session = await new_session(api, alice, {"text": "answer one"}, slow)
    session_id = session["id"]
    await turn(api, alice, session_id, "first")
    ended = await messages(api, alice, session_id)
    async with branching.app.state.container.engine.begin() as conn:  # the next reply streams slowly
        model = {**session["snapshot"]["model"], "chunk_delay_ms": 20}
        snapshot = {**session["snapshot"], "model": model}
        await conn.execute(update(Session).where(Session.id == uuid.UUID(session_id)).values(snapshot=snapshot))
    running = await api.post(
        f"/sessions/{session_id}/turns", json={"input": "second"}, headers={**alice, "Prefer": "respond-async"}
    )
    assert running.status_code == 202, running.text
    running_id = running.json()["id"]
    try:
        its_message = next(m for m in await messages(api, alice, session_id) if m["turn_id"] == running_id)
        refused = await _fork(api, alice, session_id, at_message_id=its_message["id"])
        assert (refused.status_code, refused.json()["code"]) == (409, "turn_running")
        assert refused.json()["active_turn_id"] == running_id
        whole = await _fork(api, alice, session_id)
        assert (whole.status_code, whole.json()["code"]) == (409, "turn_running")

        kept = await _fork(api, alice, session_id, at_message_id=ended[-1]["id"])
        assert kept.status_code == 201, kept.text
        assert said(await messages(api, alice, kept.json()["id"])) == said(ended)
    finally:
        await api.post(f"/turns/{running_id}/cancel", headers=alice)
    assert (await settled(api, alice, running_id))["status"] == "cancelled"


async def test_a_fork_refuses_a_point_outside_its_history_and_another_tenants_or_users_session(
    branching: Branching, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    api = branching.client
    origin, items = await _conversation(api, alice)
    other, other_items = await _conversation(api, alice)

    foreign = await _fork(api, alice, origin["id"], at_message_id=other_items[0]["id"])
    assert (foreign.status_code, foreign.json()["code"]) == (422, "message_not_in_session")
    unknown = await _fork(api, alice, origin["id"], at_message_id=10**12)
    assert (unknown.status_code, unknown.json()["code"]) == (422, "message_not_in_session")
    tool = await _fork(api, alice, origin["id"], at_message_id=items[2]["id"])
    assert (tool.status_code, tool.json()["code"]) == (422, "message_not_forkable")
    assert (await _fork(api, alice, origin["id"], at_message_id=0)).status_code == 422

    assert (await _fork(api, auth_headers(f"{tenant}-x", "alice"), origin["id"])).status_code == 404
    bob = auth_headers(tenant, "bob")
    assert (await _fork(api, bob, origin["id"])).status_code == 404
    admin = await _fork(api, auth_headers(tenant, "root", roles=["admin"]), origin["id"])
    assert admin.status_code == 201, admin.text
    assert admin.json()["owner"] == "alice", "a fork belongs to its origin's owner"
    assert len(await messages(api, alice, admin.json()["id"])) == len(items)

    named = await _fork(api, alice, origin["id"], external_id="branch-1")
    assert named.status_code == 201
    again = await api.post("/sessions", json={"agent_id": origin["agent_id"], "external_id": "branch-1"}, headers=alice)
    assert (again.status_code, again.json()["forked_from"]["session_id"]) == (200, origin["id"])
    await _fork(api, alice, named.json()["id"])
    found = await api.post("/sessions", json={"agent_id": origin["agent_id"], "external_id": "branch-1"}, headers=alice)
    assert len(found.json()["forks"]) == 1
    taken = await _fork(api, alice, origin["id"], external_id="branch-1")
    assert (taken.status_code, taken.json()["code"]) == (409, "external_id_in_use")
    assert len((await api.get(f"/sessions/{origin['id']}", headers=alice)).json()["forks"]) == 2


async def test_a_fork_pins_the_agent_version_asked_for(branching: Branching, alice: dict[str, str]) -> None:
    api = branching.client
    origin, items = await _conversation(api, alice)
    patched = await api.patch(
        f"/agents/{origin['agent_id']}", json={"config": {"system_prompt": "Version two."}}, headers=alice
    )
    assert patched.json()["version"] == 2
    fork = (await _fork(api, alice, origin["id"], at_message_id=items[3]["id"], agent_version=2)).json()
    assert (fork["agent_version"], fork["snapshot"]["system_prompt"]) == (2, "Version two.")
    branching.model.requests.clear()
    await turn(api, alice, fork["id"], "again")
    assert branching.model.requests[0].system.startswith("Version two.")
    missing = await _fork(api, alice, origin["id"], agent_version=9)
    assert missing.status_code == 422
    assert [e["loc"] for e in missing.json()["errors"]] == [["body", "agent_version"]]


async def _count(branching: Branching, column: Any, where: Any) -> int:
    async with branching.app.state.container.engine.connect() as conn:
        return int(await conn.scalar(select(func.count(column)).where(where)) or 0)


async def test_a_fork_copies_no_ledger_usage_or_approvals_and_runs_a_tool_again_only_when_its_model_asks(
    branching: Branching, alice: dict[str, str]
) -> None:
    api, gateway = branching.client, branching.gateway
    issue = {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": "bug"}}]}
    origin = await new_session(api, alice, issue, {"text": "filed it"}, {"text": "nothing more to do"}, **MCP_TOOLS)
    await turn(api, alice, origin["id"], "file a bug")
    items = await messages(api, alice, origin["id"])
    assert len(gateway.calls) == 1

    after_the_call = (await _fork(api, alice, origin["id"], at_message_id=items[-1]["id"])).json()
    fork_id = uuid.UUID(after_the_call["id"])
    for column, where in (
        (ToolExecution.id, ToolExecution.session_id == fork_id),
        (Usage.id, Usage.session_id == fork_id),
        (Approval.id, Approval.session_id == fork_id),
    ):
        assert await _count(branching, column, where) == 0
    await turn(api, alice, after_the_call["id"], "anything else?")
    assert len(gateway.calls) == 1, "the kept call is not run again: the model did not ask"

    before_the_call = (await _fork(api, alice, origin["id"], at_message_id=items[0]["id"])).json()
    frames = await turn(api, alice, before_the_call["id"], "file it here too")
    assert [f.data["result"] for f in frames if f.event == "tool_call.completed"] == ["created issue #2: bug"]
    assert len(gateway.calls) == 2, "asked again in the branch, the call runs again: a new call"
    assert gateway.calls[0][1] != gateway.calls[1][1]


async def test_a_summary_covering_only_kept_messages_comes_along_and_a_later_one_does_not(
    branching: Branching, tenant: str, alice: dict[str, str]
) -> None:
    api = branching.client
    origin, items = await _conversation(api, alice)
    async with branching.app.state.container.engine.begin() as conn:
        await conn.execute(
            Summary.__table__.insert().values(
                id=uuid.uuid4(), tenant_id=tenant, session_id=uuid.UUID(origin["id"]),
                turn_id=uuid.UUID(items[3]["turn_id"]), first_message_id=items[0]["id"],
                last_message_id=items[3]["id"], message_count=4, model_calls=1, content="the first exchange",
                tokens=3, created_at=utcnow(),
            )
        )  # fmt: skip
    covered = (await _fork(api, alice, origin["id"], at_message_id=items[4]["id"])).json()
    uncovered = (await _fork(api, alice, origin["id"], at_message_id=items[1]["id"])).json()
    copies = await messages(api, alice, covered["id"])
    async with branching.app.state.container.engine.connect() as conn:
        carried = (await conn.execute(select(Summary).where(Summary.session_id == uuid.UUID(covered["id"])))).all()
        left = await conn.scalar(select(func.count(Summary.id)).where(Summary.session_id == uuid.UUID(uncovered["id"])))
    assert [(s.content, s.message_count, s.first_message_id, s.last_message_id) for s in carried] == [
        ("the first exchange", 4, copies[0]["id"], copies[3]["id"])
    ]
    assert left == 0


async def test_a_fork_lives_by_its_own_idle_ttl_and_retention(branching: Branching, alice: dict[str, str]) -> None:
    api, app = branching.client, branching.app
    origin, items = await _conversation(api, alice)
    fork = (await _fork(api, alice, origin["id"])).json()
    engine = app.state.container.engine
    sweeper = session_sweeper(SweepLimits.of(LIFECYCLE), engine, app.state.container.turns)
    hour_ago = utcnow() - timedelta(seconds=LIFECYCLE.session_idle_ttl_seconds + 60)
    async with engine.begin() as conn:
        await conn.execute(update(Session).where(Session.id == uuid.UUID(origin["id"])).values(last_active_at=hour_ago))
        await conn.execute(update(Turn).where(Turn.session_id == uuid.UUID(origin["id"])).values(updated_at=hour_ago))
    await sweeper.sweep()
    assert (await api.get(f"/sessions/{origin['id']}", headers=alice)).json()["status"] == "expired"
    assert (await api.get(f"/sessions/{fork['id']}", headers=alice)).json()["status"] == "open"

    month_ago = utcnow() - timedelta(days=LIFECYCLE.retention_days, hours=1)
    async with engine.begin() as conn:
        await conn.execute(update(Session).where(Session.id == uuid.UUID(origin["id"])).values(closed_at=month_ago))
    await sweeper.sweep()
    assert await messages(api, alice, origin["id"]) == []
    assert said(await messages(api, alice, fork["id"])) == said(items), "a fork's history is its own copy"
    assert (await turn(api, alice, fork["id"], "still here?"))[-1].data["status"] == "completed"

    async with engine.begin() as conn:
        await conn.execute(update(Session).where(Session.id == uuid.UUID(fork["id"])).values(last_active_at=hour_ago))
        await conn.execute(update(Turn).where(Turn.session_id == uuid.UUID(fork["id"])).values(updated_at=hour_ago))
    await sweeper.sweep()
    assert (await api.get(f"/sessions/{fork['id']}", headers=alice)).json()["status"] == "expired"
