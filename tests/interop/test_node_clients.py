"""The real JavaScript clients drive both doors (tests/node/doors.mjs, installed by `make test`):
`@modelcontextprotocol/sdk` lists the agent's tool and calls it, gets the awaiting-approval result,
approves through the URL it names and calls again; `@a2a-js/sdk` streams a task to `input-required`,
answers it with decisions, reads, resubscribes and fails to cancel the finished task."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.approvals.helpers import GATE_CALCULATOR
from tests.factories import create_agent, scripted_config

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
NODE_TIMEOUT_SECONDS = 90
GATED = scripted_config(
    {"text": "Let me check.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[GATE_CALCULATOR],
)

pytestmark = pytest.mark.skipif(
    not (NODE_DIR / "node_modules").exists() or shutil.which("node") is None,
    reason="`make test` installs the npm clients first (make node-clients)",
)


async def _doors(base_url: str, user: dict[str, str], *args: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        "node", str(NODE_DIR / "doors.mjs"), base_url, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "AGENT_RUNTIME_TOKEN": user["Authorization"].removeprefix("Bearer ")},
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=NODE_TIMEOUT_SECONDS)
    assert process.returncode == 0, err.decode()
    return dict(orjson.loads(out))


async def test_the_javascript_clients_list_call_stream_and_answer_approvals(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, GATED, name="calc")
    report = await _doors(base_url, user, agent["id"], "calc")

    mcp = report["mcp"]
    assert mcp["tools"] == [{"name": "calc", "required": ["input"]}]
    assert mcp["first"]["status"] == "interrupted"
    assert mcp["first"]["approvals"][0]["name"] == "calculator"
    assert mcp["decided"] == 202
    assert mcp["second"] == {
        "text": "It is 42.",
        "isError": False,
        "structured": mcp["second"]["structured"] | {"status": "completed", "turn_id": mcp["first"]["turnId"]},
    }
    assert "It is 42." in "".join(mcp["progress"])

    a2a = report["a2a"]
    assert a2a["streamed"][0]["kind"] == "task"
    waiting = a2a["streamed"][-1]
    assert (waiting["state"], waiting["final"]) == ("input-required", True)
    assert waiting["data"]["approvals"][0]["arguments"] == {"expression": "6*7"}
    assert "Let me check." in "".join(e["text"] for e in a2a["streamed"] if e.get("state") == "working")
    assert a2a["done"] == {"kind": "task", "state": "completed", "answer": "It is 42."}
    assert a2a["fetched"]["state"] == "completed"
    assert a2a["replayed"][-1]["state"] == "completed"
    assert "It is 42." in "".join(e["text"] for e in a2a["replayed"] if e.get("state") == "working")
    assert a2a["cancelError"] is not None

    for turn_id, channel in ((mcp["first"]["turnId"], "mcp"), (a2a["taskId"], "a2a")):
        turn = (await api.get(f"/turns/{turn_id}", headers=user)).json()
        assert (turn["status"], turn["channel"]) == ("completed", channel)
