"""A client may decide the moment it reads approval.required, before the run has settled."""

from __future__ import annotations

import httpx

from app.settings import Settings
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import iter_frames, read_turn
from tests.turns.loopback import serve_on_loopback

GATED = scripted_config(
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2*21"}}]},
    {"text": "the answer is 42"},
    policies=[{"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}],
)


async def test_deciding_on_approval_required_resumes_the_turn(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        agent = await create_agent(client, alice, GATED)
        session = await create_session(client, alice, agent["id"])
        url = f"/sessions/{session['id']}/turns"
        async with client.stream("POST", url, json={"input": "go"}, headers=alice) as response:
            async for frame in iter_frames(response):
                if frame.event == "approval.required":
                    approval_id = frame.data["approval_id"]
                    break
            resumed = await read_turn(
                client, "POST", f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice
            )
    assert resumed[0].event == "turn.started"
    assert resumed[-1].data["status"] == "completed"
    assert resumed[-1].data["final_output"] == "the answer is 42"
