"""The hot path and the ORM write the session rules each in their own SQL: these tests hold them together.

Visibility: `TurnStore.session_for_turn` (a new turn, raw asyncpg) and `SessionRepository.get` (REST).
Pinning: `create_pinned` (POST /sessions, one statement) and `SessionService.create` (its ORM fallback).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.auth.principal import Principal
from app.core.db import unit_of_work
from app.errors import Conflict, NotFound
from app.runtime.store.turns import TurnStore
from app.sessions import schemas
from app.sessions.expiry import IdleTtl
from app.sessions.repository import SessionRepository
from app.sessions.service import SessionService
from app.sessions.store import create_pinned
from tests.factories import create_agent, create_session, scripted_config


def principals(tenant: str) -> dict[str, tuple[Principal, bool]]:
    """Who asks, and whether alice's session must be visible to them."""
    other = f"tenant-{uuid.uuid4().hex[:8]}"
    return {
        "owner": (Principal("alice", tenant), True),
        "another user": (Principal("bob", tenant), False),
        "admin": (Principal("carol", tenant, frozenset({"admin"})), True),
        "same sub, other tenant": (Principal("alice", other), False),
        "admin of another tenant": (Principal("carol", other, frozenset({"admin"})), False),
    }


@pytest.mark.parametrize("who", list(principals("t")))
async def test_session_visibility_is_the_same_on_the_hot_path_and_in_the_orm(
    app: FastAPI, client: httpx.AsyncClient, tenant: str, alice: dict[str, str], who: str
) -> None:
    agent = await create_agent(client, alice)
    session_id = uuid.UUID((await create_session(client, alice, agent["id"]))["id"])
    principal, visible = principals(tenant)[who]
    state = app.state.container
    hot = await TurnStore(state.sql).session_for_turn(principal.tenant_id, session_id, principal.owner_filter)
    async with unit_of_work(state.session_factory) as db:
        orm = await SessionRepository(db, principal.tenant_id).get(principal, session_id)
    assert (hot is not None, orm is not None) == (visible, visible)


async def _both_paths(app: FastAPI, principal: Principal, agent_id: uuid.UUID, version: int | None) -> tuple[Any, Any]:
    """(version, snapshot) each path pins, or the ORM's error class (the hot path answers None)."""
    state = app.state.container
    hot = await create_pinned(
        state.sql, tenant_id=principal.tenant_id, owner_sub=principal.sub, agent_id=agent_id, version=version,
        metadata={},
    )  # fmt: skip
    try:
        async with unit_of_work(state.session_factory) as db:
            made = await SessionService(db, principal, ttl=IdleTtl(0)).create(
                schemas.SessionCreate(agent_id=agent_id, agent_version=version)
            )
            orm: Any = (made.agent_version, made.snapshot)
    except (NotFound, Conflict) as exc:
        orm = type(exc)
    return (None if hot is None else (hot["agent_version"], hot["snapshot"])), orm


async def test_session_pinning_is_the_same_on_the_hot_path_and_in_the_orm(
    app: FastAPI, client: httpx.AsyncClient, tenant: str, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, scripted_config({"text": "one"}))
    two = scripted_config({"text": "two"})
    assert (await client.patch(f"/agents/{agent['id']}", json={"config": two}, headers=alice)).status_code == 200
    agent_id, alice_p = uuid.UUID(agent["id"]), Principal("alice", tenant)
    versions = {
        v["version"]: v["config"]
        for v in (await client.get(f"/agents/{agent_id}/versions", headers=alice)).json()["items"]
    }
    for version, expected in [(None, 2), (1, 1), (2, 2)]:
        hot, orm = await _both_paths(app, alice_p, agent_id, version)
        assert hot == orm == (expected, versions[expected]), version
    hot, orm = await _both_paths(app, alice_p, agent_id, 3)
    assert (hot, orm) == (None, NotFound)
    hot, orm = await _both_paths(app, Principal("alice", "another-tenant"), agent_id, None)
    assert (hot, orm) == (None, NotFound)
    assert (await client.delete(f"/agents/{agent_id}", headers=alice)).status_code == 204
    hot, orm = await _both_paths(app, alice_p, agent_id, None)
    assert (hot, orm) == (None, Conflict)
