"""Deliveries to a real loopback receiver: signed per Standard Webhooks, retried, durable, once."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook as Verifier
from standardwebhooks.webhooks import WebhookVerificationError

from app.settings import Settings, WebhookSettings
from app.webhooks.signing import new_secret
from tests.conftest import TokenFactory, make_settings, running_app
from tests.sse import read_turn
from tests.turns.support import scripted_session
from tests.webhooks.receiver import receiver_on_free_port, serve

WAIT_SECONDS = 30.0
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}
NEEDS_APPROVAL = [{"id": "calc", "point": "tool", "tool": "calculator", "verdict": "requires_approval", "reason": "r"}]


def hook_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"allowed_hosts": ["127.0.0.1"], "poll_seconds": 0.05, "retry_first_seconds": 0.2}
    values.update(overrides)
    return make_settings(database_url, data_dir, webhooks=WebhookSettings(**values))


async def subscribe(client: httpx.AsyncClient, admin: dict[str, str], url: str, *events: str) -> dict[str, Any]:
    response = await client.post("/webhooks", json={"url": url, "events": list(events)}, headers=admin)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def until(predicate: Any, what: str) -> None:
    async with asyncio.timeout(WAIT_SECONDS):
        while not await predicate():
            await asyncio.sleep(0.05)


async def deliveries(client: httpx.AsyncClient, admin: dict[str, str], hook_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/webhooks/{hook_id}/deliveries", headers=admin)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
async def test_turn_ended_and_approval_required_arrive_signed(
    backend: str, database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    """The outbox row is written with its event: one statement on PostgreSQL, one transaction on SQLite."""
    admin = auth_headers(tenant, "root", roles=["admin"])
    receiver = receiver_on_free_port()
    url = database_url if backend == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'embedded.db'}"
    async with serve(receiver), running_app(hook_settings(url, tmp_path)) as (_, client):
        hook = await subscribe(client, admin, receiver.url, "turn.ended", "approval.required")
        session = await scripted_session(client, admin, CALC, {"text": "42"}, policies=NEEDS_APPROVAL)
        frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=admin)
        assert frames[-1].data["status"] == "interrupted"

        async def both() -> bool:
            items = await deliveries(client, admin, hook["id"])
            return len(items) == 2 and all(i["status"] == "delivered" for i in items)

        await until(both, "two deliveries")
        items = await deliveries(client, admin, hook["id"])
    verifier = Verifier(hook["secret"])
    bodies = [verifier.verify(r.body, r.headers) for r in receiver.received]
    assert sorted(b["type"] for b in bodies) == ["approval.required", "turn.ended"]
    streamed = {f.event: f.data for f in frames}
    for body in bodies:
        assert body == streamed[body["type"]]
    assert {r.headers["webhook-id"] for r in receiver.received} == {f"msg_{i['id'].replace('-', '')}" for i in items}
    assert {(i["status"], i["attempts"], i["response_status"]) for i in items} == {("delivered", 1, 204)}
    first = receiver.received[0]
    with pytest.raises(WebhookVerificationError):
        verifier.verify(first.body + b" ", first.headers)
    with pytest.raises(WebhookVerificationError):
        Verifier(new_secret()).verify(first.body, first.headers)


async def test_only_subscribed_event_types_of_the_own_tenant_are_delivered(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    stranger = auth_headers(f"{tenant}-x", "root", roles=["admin"])
    receiver = receiver_on_free_port()
    async with serve(receiver), running_app(hook_settings(database_url, tmp_path)) as (_, client):
        hook = await subscribe(client, admin, receiver.url, "turn.ended")
        session = await scripted_session(client, stranger, {"text": "not yours"})
        await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=stranger)
        mine = await scripted_session(client, admin, {"text": "yours"})
        frames = await read_turn(client, "POST", f"/sessions/{mine['id']}/turns", json={"input": "x"}, headers=admin)
        # deliveries are stored with their events: both turns' rows are in by now
        (only,) = await deliveries(client, admin, hook["id"])
        assert (only["turn_id"], only["event_type"]) == (frames[-1].data["turn_id"], "turn.ended")

        async def delivered() -> bool:
            return (await deliveries(client, admin, hook["id"]))[0]["status"] == "delivered"

        await until(delivered, "the delivery")
    assert [json.loads(r.body)["final_output"] for r in receiver.received] == ["yours"]


async def test_a_receiver_that_is_down_for_a_while_gets_the_event_later(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    receiver = receiver_on_free_port()
    async with running_app(hook_settings(database_url, tmp_path)) as (_, client):
        hook = await subscribe(client, admin, receiver.url, "turn.ended")
        session = await scripted_session(client, admin, {"text": "later"})
        await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=admin)

        async def retried() -> bool:
            items = await deliveries(client, admin, hook["id"])
            return bool(items) and items[0]["attempts"] >= 2

        await until(retried, "two failed attempts")
        (failing,) = await deliveries(client, admin, hook["id"])
        assert failing["status"] == "pending"
        assert failing["last_error"]
        assert failing["delivered_at"] is None
        async with serve(receiver):

            async def delivered() -> bool:
                return (await deliveries(client, admin, hook["id"]))[0]["status"] == "delivered"

            await until(delivered, "the delivery once the receiver is up")
    assert len(receiver.received) == 1
    assert json.loads(receiver.received[0].body)["final_output"] == "later"


async def test_a_crash_between_the_event_and_its_delivery_loses_nothing(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    """The process that stored the event goes away before any delivery; the next one delivers it."""
    admin = auth_headers(tenant, "root", roles=["admin"])
    receiver = receiver_on_free_port()
    async with running_app(hook_settings(database_url, tmp_path, poll_seconds=3600)) as (_, client):
        hook = await subscribe(client, admin, receiver.url, "turn.ended")
        session = await scripted_session(client, admin, {"text": "survives"})
        await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=admin)
        (waiting,) = await deliveries(client, admin, hook["id"])
    assert (waiting["status"], waiting["attempts"]) == ("pending", 0)
    async with serve(receiver), running_app(hook_settings(database_url, tmp_path)) as (_, client):

        async def delivered() -> bool:
            return (await deliveries(client, admin, hook["id"]))[0]["status"] == "delivered"

        await until(delivered, "the delivery after the restart")
    assert [json.loads(r.body)["final_output"] for r in receiver.received] == ["survives"]


async def test_two_instances_deliver_each_event_once(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    receiver = receiver_on_free_port()
    turns = 12
    settings = hook_settings(database_url, tmp_path, poll_seconds=0.01)
    async with serve(receiver), running_app(settings) as (_, first), running_app(settings) as (_, second):
        hook = await subscribe(first, admin, receiver.url, "turn.ended")
        sessions = [await scripted_session(first, admin, {"text": f"turn {i}"}) for i in range(turns)]
        await asyncio.gather(
            *(
                read_turn(client, "POST", f"/sessions/{s['id']}/turns", json={"input": "x"}, headers=admin)
                for s, client in zip(sessions, [first, second] * turns, strict=False)
            )
        )

        async def all_delivered() -> bool:
            items = await deliveries(second, admin, hook["id"])
            return len(items) == turns and all(i["status"] == "delivered" for i in items)

        await until(all_delivered, "every delivery")
        items = await deliveries(second, admin, hook["id"])
    # A second claim of a row would count an attempt that did not fail; a retry follows a failed one.
    assert all(i["attempts"] == 1 or i["last_error"] for i in items), items
    ids = Counter(r.headers["webhook-id"] for r in receiver.received)
    assert len(ids) == turns
    assert set(ids.values()) == {1}


async def test_a_turn_ended_outside_its_run_is_delivered_too(
    database_url: str, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    """Cancelling an interrupted turn stores its closing event outside the writer (end_unowned_turn)."""
    admin = auth_headers(tenant, "root", roles=["admin"])
    receiver = receiver_on_free_port()
    async with serve(receiver), running_app(hook_settings(database_url, tmp_path)) as (_, client):
        await subscribe(client, admin, receiver.url, "turn.ended")
        session = await scripted_session(client, admin, CALC, {"text": "42"}, policies=NEEDS_APPROVAL)
        frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=admin)
        cancelled = await client.post(f"/turns/{frames[-1].data['turn_id']}/cancel", headers=admin)
        assert cancelled.status_code in (200, 202, 204), cancelled.text

        async def both() -> bool:
            return len(receiver.received) >= 2

        await until(both, "both closing events")
    assert sorted(json.loads(r.body)["status"] for r in receiver.received) == ["cancelled", "interrupted"]
