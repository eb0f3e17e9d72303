"""AG-UI and AI SDK endpoints over HTTP: threads are sessions, approvals go through the approvals
service, and a run replays from the stored event log."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from tests.approvals.helpers import GATE_CALCULATOR
from tests.conftest import TokenFactory
from tests.factories import create_agent, scripted_config

GATED = scripted_config(
    {"text": "Let me check.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[GATE_CALCULATOR],
)


def _data(response: httpx.Response) -> list[Any]:
    lines = [line.removeprefix("data: ") for line in response.text.split("\n") if line.startswith("data: ")]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def _run_input(thread: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": str(uuid.uuid4()), "messages": list(messages), **extra}


USER = {"id": "m1", "role": "user", "content": "what is 6 times 7?"}


async def test_ag_ui_run_interrupts_and_a_resume_entry_decides_through_the_approvals_service(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, GATED)
    url = f"/ag-ui/agents/{agent['id']}"
    first = await client.post(url, json=_run_input("t-1", USER), headers=alice)
    assert first.status_code == 200, first.text
    assert first.headers["content-type"].startswith("text/event-stream")
    events = _data(first)
    assert events[0]["type"] == "RUN_STARTED"
    custom = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "approval.required"]
    assert len(custom) == 1
    approval_id = custom[0]["value"]["approval_id"]
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"]["interrupts"][0]["id"] == approval_id

    sessions = (await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]
    assert len(sessions) == 1

    resume = [{"interruptId": approval_id, "status": "resolved", "payload": {"decision": "approve"}}]
    second = await client.post(url, json=_run_input("t-1", USER, resume=resume), headers=alice)
    assert second.status_code == 200, second.text
    resumed = _data(second)
    assert [e["content"] for e in resumed if e["type"] == "TOOL_CALL_RESULT"] == ["42"]
    assert resumed[-1]["type"] == "RUN_FINISHED"
    assert resumed[-1]["result"] == "It is 42."
    approval = (await client.get(f"/approvals/{approval_id}", headers=alice)).json()
    assert (approval["status"], approval["decided_by"]) == ("approved", "alice")
    assert len((await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]) == 1

    answered = {"id": "a1", "role": "assistant", "content": "It is 42."}
    replay = _data(await client.post(url, json=_run_input("t-1", USER, answered), headers=alice))
    assert [e["type"] for e in replay] == [e["type"] for e in resumed]  # the latest run, from the log
    assert replay[-1]["result"] == "It is 42."


async def test_a_thread_is_the_callers_own_session(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice, scripted_config({"text": "hello there"}))
    url = f"/ag-ui/agents/{agent['id']}"
    bob = auth_headers(tenant, "bob")
    for headers in (alice, bob):
        response = await client.post(url, json=_run_input("shared-thread", USER), headers=headers)
        assert response.status_code == 200, response.text
    mine = (await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]
    theirs = (await client.get(f"/sessions?agent_id={agent['id']}", headers=bob)).json()["items"]
    assert len(mine) == 1
    assert len(theirs) == 1
    assert mine[0]["id"] != theirs[0]["id"]
    by_id = await client.post(url, json=_run_input(mine[0]["id"], USER), headers=alice)
    assert by_id.status_code == 200
    assert len((await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]) == 1
    stranger = auth_headers(f"other-{tenant}", "alice")
    assert (await client.post(url, json=_run_input("x", USER), headers=stranger)).status_code == 404


async def test_bad_ag_ui_input_is_a_precise_422(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice, scripted_config({"text": "hello there"}))
    url = f"/ag-ui/agents/{agent['id']}"
    missing = await client.post(url, json={"messages": []}, headers=alice)
    assert missing.status_code == 422
    assert missing.headers["content-type"] == "application/problem+json"
    assert {tuple(e["loc"]) for e in missing.json()["errors"]} >= {("body", "threadId"), ("body", "runId")}
    nothing = await client.post(url, json=_run_input("empty"), headers=alice)
    assert nothing.status_code == 422
    bad_resume = _run_input("t", USER, resume=[{"interruptId": "not-a-uuid", "status": "resolved"}])
    assert (await client.post(url, json=bad_resume, headers=alice)).status_code == 422


async def test_ai_sdk_chat_streams_then_resumes_after_the_approval(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, GATED)
    url = f"/ai-sdk/agents/{agent['id']}/chat"
    question = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "what is 6 times 7?"}]}
    body = {"id": "chat-1", "trigger": "submit-message", "messages": [question]}
    first = await client.post(url, json=body, headers=alice)
    assert first.status_code == 200, first.text
    assert first.headers["x-vercel-ai-ui-message-stream"] == "v1"
    chunks = _data(first)
    assert chunks[0]["type"] == "start"
    assert chunks[-1] == "[DONE]"
    assert chunks[-2]["type"] == "finish"
    approval = next(c for c in chunks if isinstance(c, dict) and c["type"] == "data-approval")
    decided = await client.post(f"/approvals/{approval['id']}", json={"decision": "approve"},
                                headers={**alice, "Accept": "application/json"})  # fmt: skip
    assert decided.json()["status"] == "completed"

    resumed = await client.get(f"{url}/chat-1/stream", headers=alice)
    assert resumed.status_code == 200
    chunks = _data(resumed)
    assert chunks[0] == {"type": "start", "messageId": first_message_id(first)}
    assert {"type": "tool-output-available", "toolCallId": approval["data"]["tool_call_id"], "output": "42"} in chunks
    assert chunks[-2]["finishReason"] == "stop"
    assert (await client.get(f"{url}/never-used/stream", headers=alice)).status_code == 204


def first_message_id(response: httpx.Response) -> str:
    return str(_data(response)[0]["messageId"])
