"""The embedded default: the same app, models and migrations on a SQLite file (what `make run` uses)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn

GATED = scripted_config(
    {
        "tool_calls": [
            {"name": "echo", "arguments": {"text": "A"}},
            {"name": "calculator", "arguments": {"expression": "6*7"}},
        ]
    },
    {"text": "done"},
    policies=[{"id": "calc", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}],
)


async def test_a_gated_turn_runs_and_resumes_on_sqlite(tmp_path: Path, alice: dict[str, str]) -> None:
    settings = make_settings(f"sqlite+aiosqlite:///{tmp_path / 'embedded.db'}", tmp_path)
    async with running_app(settings) as (_, client):
        agent = await create_agent(client, alice, GATED)
        assert datetime.fromisoformat(agent["created_at"]).tzinfo is not None
        session = await create_session(client, alice, agent["id"])
        first = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=alice)
        assert first[-1].data["status"] == "interrupted"
        approval_id = next(f.data["approval_id"] for f in first if f.event == "approval.required")
    async with running_app(settings) as (_, client):
        resumed = await read_turn(
            client, "POST", f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice
        )
        assert [f.data["result"] for f in resumed if f.event == "tool_call.completed"] == ["42"]
        assert resumed[-1].data["status"] == "completed"
        assert resumed[-1].data["final_output"] == "done"
        messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
        turn_id = first[0].data["turn_id"]
        receipts = (await client.get(f"/turns/{turn_id}/decisions", headers=alice)).json()["items"]
        human = [(r["point"], r["verdict"], r["decided_by"], r["rule_id"]) for r in receipts if r["point"] == "human"]
        assert human == [("human", "approve", "alice", "calc")]
