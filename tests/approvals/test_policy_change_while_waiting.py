"""Tenant policies are read fresh on resume: a call that became gated while the turn waited asks again."""

from __future__ import annotations

import httpx

from tests.approvals.helpers import (
    approval_ids,
    decide,
    ended,
    events,
    gated_config,
    results,
    run_turn,
    turn_id,
)
from tests.conftest import TokenFactory
from tests.sse import read_turn

CALC_ECHO_CALC = {
    "tool_calls": [
        {"name": "calculator", "arguments": {"expression": "1+1"}},
        {"name": "echo", "arguments": {"text": "middle"}},
        {"name": "calculator", "arguments": {"expression": "2+3"}},
    ]
}
GATE_ECHO = {"id": "echo-now-gated", "point": "tool", "tool": "echo", "verdict": "requires_approval"}


async def test_call_gated_after_the_interrupt_asks_only_for_itself(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    _, frames = await run_turn(client, alice, gated_config(CALC_ECHO_CALC, {"text": "finished"}))
    first, last = approval_ids(frames)
    root = auth_headers(tenant, "root", roles=["admin"])
    assert (await client.put("/policies", json={"policies": [GATE_ECHO]}, headers=root)).status_code == 200
    body = {"decisions": [{"approval_id": first, "decision": "approve"}, {"approval_id": last, "decision": "approve"}]}
    second = await read_turn(client, "POST", f"/turns/{turn_id(frames)}/approvals", json=body, headers=alice)
    assert results(second) == ["2"]
    assert [e["name"] for e in events(second, "approval.required")] == ["echo"]
    assert ended(second)["status"] == "interrupted"

    echo_approval = approval_ids(second)[0]
    resumed = await decide(client, alice, echo_approval)
    assert results(resumed) == ["middle", "5"]
    assert ended(resumed)["status"] == "completed"
    assert ended(resumed)["final_output"] == "finished"
