"""Another tenant's (or another user's) turn is a 404 at once: no route touching a turn or its
approvals waits for that turn's run or for a lock on its row before it has authorised the caller.

The order of events is what is asserted: every foreign request is answered while tenant A's turn is
still running and its row is still locked (a waiting request would only be answered after both end).
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Turn
from tests.conftest import TokenFactory
from tests.turns.support import FrameReader, slow_session, wait_for_status

SAFETY_NET_SECONDS = 30
"""Only so that a request that waits fails the test instead of hanging it (A's turn lasts a minute)."""


async def test_foreign_decisions_reads_and_cancels_answer_404_while_the_turn_runs_and_its_row_is_locked(
    live_client: httpx.AsyncClient, sql: AsyncEngine, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    session = await slow_session(live_client, alice)
    async with live_client.stream("POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=alice) as (
        stream
    ):
        turn_id = (await FrameReader(stream).until("message.delta"))[0].data["turn_id"]
        outsiders = [auth_headers(f"other-{uuid.uuid4().hex[:8]}", "mallory"), auth_headers(tenant, "bob")]
        decisions = {"decisions": [{"approval_id": str(uuid.uuid4()), "decision": "approve"}]}
        requests = [
            ("POST", f"/turns/{turn_id}/approvals", decisions),
            ("POST", f"/approvals/{uuid.uuid4()}", {"decision": "approve"}),
            ("POST", f"/turns/{turn_id}/cancel", None),
            ("GET", f"/turns/{turn_id}/events", None),
            ("GET", f"/turns/{turn_id}", None),
        ]
        async with sql.connect() as lock_holder, lock_holder.begin():
            await lock_holder.execute(select(Turn.id).where(Turn.id == uuid.UUID(turn_id)).with_for_update())
            for headers in outsiders:
                for method, url, body in requests:
                    response = await asyncio.wait_for(
                        live_client.request(method, url, json=body, headers=headers), SAFETY_NET_SECONDS
                    )
                    assert response.status_code == 404, (method, url, response.text)
                    assert response.headers["content-type"] == "application/problem+json"
            async with sql.connect() as reader:
                status = await reader.scalar(select(Turn.status).where(Turn.id == uuid.UUID(turn_id)))
            assert status == "running", "every foreign answer came while A's turn still ran"
        cancelled = await live_client.post(f"/turns/{turn_id}/cancel", headers=alice)
        assert cancelled.json()["status"] == "cancelled"
    assert (await wait_for_status(live_client, alice, turn_id))["status"] == "cancelled"
