"""The real client libraries from npm read our streams: `@ag-ui/client`'s `HttpAgent` and the AI SDK's
`DefaultChatTransport` + `readUIMessageStream` (tests/node/clients.mjs, installed by `make node-clients`).

Each runs the approval scenario: a turn that stops at a gated call, the decision through
`POST /approvals/{id}`, then the resumed run picked up through the client's own protocol (AG-UI: a
run answering the interrupt; AI SDK: `reconnectToStream`). Then each replays a turn continued after
a hand-over (tests/handover.py) and must end up holding what the service stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.auth.verify import mint_user_token
from app.main import create_app
from app.settings import Settings
from tests.approvals.helpers import GATE_CALCULATOR
from tests.conftest import TEST_SECRET
from tests.factories import create_agent, create_session, scripted_config
from tests.handover import TOOL_THEN_ANSWER, HandOver, HandOverApp
from tests.turns.loopback import serve_asgi, serve_on_loopback

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
NODE_TIMEOUT_SECONDS = 90
CONFIG = scripted_config(
    {"text": "Let me check.", "tool_calls": [{"name": "echo", "arguments": {"text": "hello"}},
                                              {"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "The answer is 42."},
    policies=[GATE_CALCULATOR],
)  # fmt: skip

pytestmark = pytest.mark.skipif(
    not (NODE_DIR / "node_modules").exists() or shutil.which("node") is None,
    reason="`make test` installs the npm clients first (make node-clients)",
)


def _user() -> dict[str, str]:
    token = mint_user_token(TEST_SECRET, tenant_id=f"node-{uuid.uuid4().hex[:8]}", sub="alice", roles=[],
                            ttl_seconds=600)  # fmt: skip
    return {"Authorization": f"Bearer {token}"}


async def _clients(base_url: str, user: dict[str, str], *args: str) -> dict[str, Any]:
    """Runs tests/node/clients.mjs against the service; its JSON report."""
    process = await asyncio.create_subprocess_exec(
        "node", str(NODE_DIR / "clients.mjs"), base_url, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "AGENT_RUNTIME_TOKEN": user["Authorization"].removeprefix("Bearer ")},
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=NODE_TIMEOUT_SECONDS)
    assert process.returncode == 0, err.decode()
    return dict(json.loads(out))


@pytest.fixture(scope="module")
async def results(settings: Settings) -> dict[str, Any]:
    """One run of the Node script for the module: both approval tests read its report."""
    alice = _user()
    async with serve_on_loopback(settings) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            agent = await create_agent(client, alice, CONFIG)
        return await _clients(base_url, alice, agent["id"])


def test_ag_ui_http_agent_reads_the_interrupt_and_the_resumed_run(results: dict[str, Any]) -> None:
    ag_ui = results["agUi"]
    first = ag_ui["first"]
    assert first["types"][0] == "RUN_STARTED"
    assert first["types"][-1] == "RUN_FINISHED"
    approval = next(c["value"] for c in first["custom"] if c["name"] == "approval.required")
    assert approval["reason"] == "arithmetic needs a human"
    assert {c["name"] for c in first["custom"]} == {"approval.required", "policy.decision"}
    assert first["finished"]["outcome"] == "interrupt"
    assert first["finished"]["interrupts"][0]["id"] == approval["approval_id"]
    assert ag_ui["decided"] == "completed"
    assert ag_ui["resumed"]["finished"] == {"outcome": "success", "result": "The answer is 42."}
    assert ag_ui["texts"] == ["Let me check.", "The answer is 42."]
    assert ag_ui["toolCalls"] == ["echo", "calculator"]
    assert ag_ui["toolResults"] == ["hello", "42"]


def test_ai_sdk_reads_the_ui_message_stream_and_resumes_it(results: dict[str, Any]) -> None:
    ai = results["aiSdk"]
    first = {p["type"]: p for p in ai["first"]}
    assert first["text"]["text"] == "Let me check."
    assert first["tool-echo"]["state"] == "output-available"
    assert first["tool-echo"]["output"] == "hello"
    assert first["tool-calculator"]["state"] == "input-available"
    assert first["tool-calculator"]["input"] == {"expression": "6*7"}
    assert first["data-approval"]["data"]["name"] == "calculator"
    assert "data-policy-decision" in first
    assert ai["firstMetadata"]["status"] == "interrupted"
    assert ai["decided"] == "completed"
    assert ai["resumedId"] == ai["firstId"]
    resumed = {p["type"]: p for p in ai["resumed"]}
    assert resumed["tool-calculator"]["state"] == "output-available"
    assert resumed["tool-calculator"]["output"] == "42"
    assert [p["text"] for p in ai["resumed"] if p["type"] == "text"] == ["Let me check.", "The answer is 42."]
    assert ai["metadata"]["status"] == "completed"


async def test_both_clients_replay_a_continued_turn_as_the_service_stored_it(
    settings: Settings, sql: AsyncEngine
) -> None:
    alice = _user()
    front = HandOverApp(create_app(settings), sql, HandOver(durable=2, lost=13, reason="replica_lost"))
    async with serve_asgi(front, lifespan="on") as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            agent = await create_agent(client, alice, TOOL_THEN_ANSWER)
            session = await create_session(client, alice, agent["id"])
            cut = await client.post(f"/sessions/{session['id']}/turns", json={"input": "echo?"}, headers=alice)
            assert "turn.ended" not in cut.text  # the hand-over cut it; the store holds the continuation
            stored = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
        report = await _clients(base_url, alice, agent["id"], session["id"])
    replies = [m["content"] for m in stored if m["role"] == "assistant" and m["content"]]
    assert replies == ["Let me ask the echo tool.", "The echo said hello."]

    ag_ui = report["agUi"]
    assert ag_ui["types"].count("RUN_STARTED") == 1
    assert ag_ui["types"][-1] == "RUN_FINISHED"
    resumed = next(c["value"] for c in ag_ui["custom"] if c["name"] == "turn.resumed")
    assert resumed["reason"] == "replica_lost"
    assert len(resumed["withdrawn_message_ids"]) == 1  # the reply the lost run was streaming ("Let me")
    assert "MESSAGES_SNAPSHOT" in ag_ui["types"]
    held = ag_ui["messages"]
    assert [m["content"] for m in held if m["role"] == "assistant" and m.get("content")] == replies
    assert [m["toolCalls"] for m in held if m["toolCalls"]] == [["echo"]]
    assert [m["content"] for m in held if m["role"] == "tool"] == ["hello"]

    ai = report["aiSdk"]
    assert ai["streamed"].count("data-turn-resumed") == 1
    assert ai["resumed"]["withdrawn"] == {"text_parts": ["Let me "], "tool_call_ids": []}
    assert ai["texts"] == replies
    assert ai["tools"] == [{"type": "tool-echo", "state": "output-available", "output": "hello"}]
