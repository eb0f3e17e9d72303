"""An approval is decided once: a second decision, or the loser of a race, gets 409."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.approvals.helpers import JSON, B, approval_ids, decide, ended, gated_config, ledger, run_turn, turn_id


@pytest.mark.parametrize("second", ["approve", "deny"])
async def test_second_decision_on_the_same_approval_conflicts(
    client: httpx.AsyncClient, alice: dict[str, str], second: str
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]
    assert ended(await decide(client, alice, approval_id))["status"] == "completed"
    response = await client.post(f"/approvals/{approval_id}", json={"decision": second}, headers=alice)
    assert response.status_code == 409, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (await client.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "approved"


async def test_concurrent_approvals_resume_once_and_run_the_gated_tool_once(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval_id = approval_ids(frames)[0]

    async def approve() -> httpx.Response:
        return await client.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers={**alice, **JSON})

    responses = await asyncio.gather(approve(), approve())
    assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
    winner = next(r for r in responses if r.status_code == 200).json()
    assert winner["status"] == "completed"
    assert winner["resumed_by"] == approval_id
    rows = [r for r in await ledger(sql, turn_id(frames)) if r.tool_call_id == B]
    assert [(r.result, r.is_error) for r in rows] == [("42", False)]
