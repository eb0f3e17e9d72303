"""Who may see and decide an approval, what a decision records, and when deciding is too late."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.approvals.helpers import (
    JSON,
    approval_ids,
    decide,
    gated_config,
    open_session,
    run_turn,
    start_turn,
    turn_id,
)
from tests.conftest import TokenFactory


async def test_another_user_of_the_tenant_neither_sees_nor_decides(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    bob = auth_headers(tenant, "bob")
    assert (await client.get(f"/approvals/{approval_id}", headers=bob)).status_code == 404
    assert (await client.get("/approvals", headers=bob)).json()["items"] == []
    single = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=bob)
    assert single.status_code == 404, single.text
    batch = await client.post(
        f"/turns/{turn_id(frames)}/approvals",
        json={"decisions": [{"approval_id": approval_id, "decision": "approve"}]},
        headers=bob,
    )
    assert batch.status_code == 404, batch.text
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "pending"


@pytest.mark.parametrize("roles", [[], ["admin"]])
async def test_other_tenants_neither_see_nor_decide(
    client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory, roles: list[str]
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    stranger = auth_headers(f"tenant-{uuid.uuid4().hex[:8]}", "alice", roles=roles)
    assert (await client.get(f"/approvals/{approval_id}", headers=stranger)).status_code == 404
    response = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=stranger)
    assert response.status_code == 404, response.text
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "pending"


async def test_an_admin_of_the_tenant_lists_but_does_not_decide(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    """Deciding would resume the turn as alice (tests/sessions/test_admin_writes.py)."""
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    root = auth_headers(tenant, "root", roles=["admin"])
    listed = (await client.get("/approvals", headers=root)).json()["items"]
    assert [a["id"] for a in listed] == [approval_id]
    response = await client.post(f"/approvals/{approval_id}", json={"decision": "deny"}, headers=root)
    assert response.status_code == 404, response.text
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "pending"


async def test_the_owner_decision_records_who_and_when(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    pending = (await client.get(f"/approvals/{approval_id}", headers=alice)).json()
    assert (pending["decided_by"], pending["decided_at"]) == (None, None)
    await decide(client, alice, approval_id)
    approval = (await client.get(f"/approvals/{approval_id}", headers=alice)).json()
    assert approval["status"] == "approved"
    assert approval["decided_by"] == "alice"
    assert approval["decided_at"] >= approval["created_at"]


async def test_approving_in_a_closed_session_conflicts(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
    response = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice)
    assert response.status_code == 409, response.text
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "expired"


async def test_cancelling_an_interrupted_turn_expires_its_approvals(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    cancelled = await client.post(f"/turns/{turn_id(frames)}/cancel", headers=alice)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "expired"
    response = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice)
    assert response.status_code == 409, response.text
    assert (await client.get(f"/turns/{turn_id(frames)}", headers=alice)).json()["status"] == "cancelled"


async def test_list_filters_by_status_and_session(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    first, first_frames = await run_turn(client, alice, gated_config())
    second = await open_session(client, alice, gated_config())
    second_frames = await start_turn(client, alice, second)
    first_id, second_id = approval_ids(first_frames)[0], approval_ids(second_frames)[0]

    async def listed(**params: str) -> list[str]:
        response = await client.get("/approvals", params=params, headers=alice)
        assert response.status_code == 200, response.text
        return [a["id"] for a in response.json()["items"]]

    assert sorted(await listed(status="pending")) == sorted([first_id, second_id])
    assert await listed(status="pending", session_id=first["id"]) == [first_id]
    assert await listed(session_id=second["id"]) == [second_id]
    await decide(client, alice, first_id)
    assert await listed(status="pending") == [second_id]
    assert await listed(status="approved") == [first_id]
    assert await listed(status="approved", session_id=second["id"]) == []


async def test_json_resume_answers_the_completed_turn(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    response = await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers={**alice, **JSON})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    turn = response.json()
    assert turn["id"] == turn_id(frames)
    assert turn["status"] == "completed"
    assert turn["final_output"] == "all done"
    assert turn["resumed_by"] == approval_id
