"""Another tenant's turn id is 404 at once, even while the turn runs here (no lock, no wait first)."""

from __future__ import annotations

import uuid

import httpx

from tests.conftest import TokenFactory
from tests.turns.support import FrameReader, get_turn, slow_session


async def test_another_tenant_deciding_on_a_running_turn_is_404_before_any_wait(
    live_client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    """A decision waits for the local run of its turn to settle, but only for a turn the caller can see."""
    session = await slow_session(live_client, alice)
    async with live_client.stream(
        "POST", f"/sessions/{session['id']}/turns", json={"input": "talk"}, headers=alice
    ) as response:
        first = await FrameReader(response).until("message.delta")
    running = first[0].data["turn_id"]
    stranger = auth_headers(f"tenant-{uuid.uuid4().hex[:8]}", "alice", roles=["admin"])
    decided = await live_client.post(
        f"/turns/{running}/approvals",
        json={"decisions": [{"approval_id": str(uuid.uuid4()), "decision": "approve"}]},
        headers=stranger,
    )
    assert decided.status_code == 404, decided.text
    assert (await get_turn(live_client, alice, running))["status"] == "running", "answered while the turn still ran"
    assert (await live_client.post(f"/turns/{running}/cancel", headers=alice)).status_code == 200
