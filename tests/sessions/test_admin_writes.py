"""An admin reads every session of its tenant but never writes into another user's: a turn or a
decision there would run as that user (its outbound tokens' `act`) with nothing recording the admin.
Starting a turn (directly, through AG-UI's `threadId` or the AI SDK's `id`) and deciding approvals
(one or a batch) answer 404 as for any other user, and nothing changes in the user's session."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.approvals.helpers import approval_ids, gated_config, run_turn, turn_id
from tests.conftest import TokenFactory

USER = {"id": "m1", "role": "user", "content": "what is 6 times 7?"}


@pytest.fixture
def root(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


async def _turns(client: httpx.AsyncClient, headers: dict[str, str], session: dict[str, Any]) -> list[str]:
    return [t["id"] for t in (await client.get(f"/sessions/{session['id']}/turns", headers=headers)).json()["items"]]


async def test_an_admin_cannot_decide_another_users_approvals(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    session, frames = await run_turn(client, alice, gated_config())
    [approval] = approval_ids(frames)
    assert (await client.get(f"/approvals/{approval}", headers=root)).status_code == 200, "admins still read"

    single = await client.post(f"/approvals/{approval}", json={"decision": "approve"}, headers=root)
    batch = await client.post(
        f"/turns/{turn_id(frames)}/approvals",
        json={"decisions": [{"approval_id": approval, "decision": "deny"}]},
        headers=root,
    )

    assert (single.status_code, batch.status_code) == (404, 404)
    assert single.headers["content-type"] == "application/problem+json"
    pending = (await client.get(f"/approvals/{approval}", headers=alice)).json()
    assert (pending["status"], pending["decided_by"]) == ("pending", None)
    assert (await client.get(f"/turns/{turn_id(frames)}", headers=alice)).json()["status"] == "interrupted"


@pytest.mark.parametrize("strategy", ["reject", "enqueue", "interrupt", "rollback"])
async def test_an_admin_cannot_start_a_turn_in_another_users_session(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str], strategy: str
) -> None:
    session, frames = await run_turn(client, alice, gated_config())
    before = await _turns(client, alice, session)

    response = await client.post(
        f"/sessions/{session['id']}/turns",
        json={"input": "as alice", "multitask_strategy": strategy},
        headers={**root, "Accept": "application/json"},
    )

    assert response.status_code == 404, response.text
    assert await _turns(client, alice, session) == before
    assert (await client.get(f"/turns/{turn_id(frames)}", headers=alice)).json()["status"] == "interrupted"


@pytest.mark.parametrize("adapter", ["ag-ui", "ai-sdk"])
async def test_an_admin_naming_another_users_session_as_its_thread_gets_a_session_of_its_own(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str], adapter: str
) -> None:
    session, _ = await run_turn(client, alice, gated_config({"text": "hi"}))
    before = await _turns(client, alice, session)
    agent_id = session["agent_id"]
    if adapter == "ag-ui":
        body: dict[str, Any] = {"threadId": session["id"], "runId": str(uuid.uuid4()), "messages": [USER]}
        url = f"/ag-ui/agents/{agent_id}"
    else:
        body = {
            "id": session["id"],
            "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        }
        url = f"/ai-sdk/agents/{agent_id}/chat"

    response = await client.post(url, json=body, headers=root)

    assert response.status_code == 200, response.text
    assert await _turns(client, alice, session) == before, "nothing ran in alice's session"
    own = (await client.get(f"/sessions?agent_id={agent_id}", headers=root)).json()["items"]
    assert {s["owner"] for s in own} == {"alice", "root"}
