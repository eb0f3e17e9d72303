"""The official `a2a-sdk` client drives `/a2a/{agent_id}`: the card and the directory, message/send and
message/stream, an `input-required` task answered with decisions, tasks/get, tasks/cancel,
tasks/resubscribe from the stored events, the A2A error codes and tenant isolation.

Every task is an ordinary turn: the REST API shows it with `channel: "a2a"`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import (
    DataPart,
    Message,
    MessageSendConfiguration,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TextPart,
)

from tests.approvals.helpers import GATE_CALCULATOR
from tests.factories import create_agent, scripted_config
from tests.interop.conftest import bearer

GATED = scripted_config(
    {"text": "Let me check.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[GATE_CALCULATOR],
)


@asynccontextmanager
async def a2a_client(
    base_url: str, agent_id: str, headers: dict[str, str], *, streaming: bool = True
) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, f"{base_url}/a2a/{agent_id}").get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        yield client


def user_message(*parts: Part, context_id: str | None = None, task_id: str | None = None) -> Message:
    return Message(
        role=Role.user, parts=list(parts), message_id=uuid.uuid4().hex, context_id=context_id, task_id=task_id
    )


def text(value: str) -> Part:
    return Part(root=TextPart(text=value))


async def last_task(client: Client, message: Message) -> tuple[Task, list[Any]]:
    seen: list[Any] = []
    task: Task | None = None
    async for event in client.send_message(message):
        assert isinstance(event, tuple)
        task, update = event
        seen.append(update)
    assert task is not None
    return task, seen


async def test_the_card_describes_the_agent_and_the_directory_lists_the_tenants_cards(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, scripted_config(), name="Helper")
    card = (await api.get(f"/a2a/{agent['id']}/.well-known/agent-card.json", headers=user)).json()
    assert card["name"] == "Helper"
    assert card["version"] == "1"
    assert card["url"] == f"{base_url}/a2a/{agent['id']}"
    assert card["capabilities"]["streaming"] is True
    assert {s["id"] for s in card["skills"]} == {"builtin:calculator", "builtin:echo", "builtin:current_time"}
    assert card["securitySchemes"]["bearer"]["scheme"] == "bearer"
    directory = (await api.get("/a2a", headers=user)).json()["items"]
    assert [c["url"] for c in directory] == [card["url"]]
    assert (await api.get("/a2a", headers=bearer("elsewhere"))).json()["items"] == []
    other = await api.get(f"/a2a/{agent['id']}/.well-known/agent-card.json", headers=bearer("elsewhere"))
    assert other.status_code == 404


async def test_message_stream_streams_the_answer_and_the_task_is_a_turn_of_the_context(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "Hello from A2A."}), name="Helper")
    async with a2a_client(base_url, agent["id"], user) as client:
        task, updates = await last_task(client, user_message(text("hi"), context_id="ctx-1"))
        fetched = await client.get_task(TaskQueryParams(id=task.id))
    assert task.status.state == TaskState.completed
    assert task.context_id == "ctx-1"
    assert task.artifacts[0].parts[0].root.text == "Hello from A2A."
    streamed = [
        u.status.message.parts[0].root.text
        for u in updates
        if u is not None and u.kind == "status-update" and not u.final
    ]
    assert "".join(streamed) == "Hello from A2A."
    assert fetched.status.state == TaskState.completed
    turn = (await api.get(f"/turns/{task.id}", headers=user)).json()
    assert turn["channel"] == "a2a"
    session = (await api.get(f"/sessions/{turn['session_id']}", headers=user)).json()
    assert session["external_id"] == "ctx-1"


async def test_an_input_required_task_is_answered_with_decisions_and_resumes(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, GATED, name="calc")
    async with a2a_client(base_url, agent["id"], user, streaming=False) as client:
        task, _ = await last_task(client, user_message(text("what is 6 times 7?")))
        assert task.status.state == TaskState.input_required
        data = next(p.root.data for p in task.status.message.parts if isinstance(p.root, DataPart))
        [approval] = data["approvals"]
        assert approval["name"] == "calculator"
        assert approval["arguments"] == {"expression": "6*7"}
        decisions = {"decisions": [{"approval_id": approval["approval_id"], "decision": "approve"}]}
        answer = user_message(Part(root=DataPart(data=decisions)), context_id=task.context_id, task_id=task.id)
        done, _ = await last_task(client, answer)
    assert done.id == task.id
    assert done.status.state == TaskState.completed
    assert done.artifacts[0].parts[0].root.text == "It is 42."
    decided = (await api.get(f"/approvals/{approval['approval_id']}", headers=user)).json()
    assert (decided["status"], decided["decided_by"], decided["decided_channel"]) == ("approved", "alice", "a2a")


async def test_resubscribe_replays_a_finished_task_from_its_stored_events(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "Stored answer."}), name="Helper")
    async with a2a_client(base_url, agent["id"], user) as client:
        task, _ = await last_task(client, user_message(text("hi")))
        replayed = [event async for event in client.resubscribe(TaskIdParams(id=task.id))]
    final_task, final = replayed[-1]
    assert final.final is True
    assert final_task.status.state == TaskState.completed
    texts = [
        u.status.message.parts[0].root.text
        for _, u in replayed
        if u is not None and u.kind == "status-update" and not u.final
    ]
    assert "".join(texts) == "Stored answer."


async def test_errors_are_a2a_json_rpc_errors(base_url: str, api: httpx.AsyncClient, user: dict[str, str]) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "done"}), name="Helper")
    async with a2a_client(base_url, agent["id"], user, streaming=False) as client:
        with pytest.raises(A2AClientJSONRPCError) as missing:
            await client.get_task(TaskQueryParams(id=str(uuid.uuid4())))
        task, _ = await last_task(client, user_message(text("hi")))
        with pytest.raises(A2AClientJSONRPCError) as finished:
            await client.cancel_task(TaskIdParams(id=task.id))
    assert missing.value.error.code == -32001
    assert finished.value.error.code == -32002
    url = f"/a2a/{agent['id']}"
    unknown = (await api.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tasks/nothing"}, headers=user)).json()
    assert unknown["error"]["code"] == -32601
    bad = (
        await api.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {}}, headers=user)
    ).json()
    assert bad["error"]["code"] == -32602
    garbage = await api.post(url, content=b"{not json", headers={**user, "Content-Type": "text/plain"})
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (200, -32700)
    not_rpc = await api.post(url, json={"hello": 1}, headers=user)
    assert not_rpc.status_code == 200
    assert not_rpc.json()["error"]["code"] == -32600
    stranger = bearer("elsewhere")
    assert (
        await api.post(
            url, json={"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": task.id}}, headers=stranger
        )
    ).status_code == 404
    sibling = await create_agent(api, user, scripted_config(), name="sibling")
    async with a2a_client(base_url, sibling["id"], user, streaming=False) as client:
        with pytest.raises(A2AClientJSONRPCError) as elsewhere:
            await client.get_task(TaskQueryParams(id=task.id))
    assert elsewhere.value.error.code == -32001  # a task is found only through its own agent


async def test_a_non_blocking_send_answers_at_once_and_the_task_runs_on(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    config = scripted_config({"text": "slowly " * 20})
    config["model"]["chunk_delay_ms"] = 50
    agent = await create_agent(api, user, config, name="Helper")
    async with a2a_client(base_url, agent["id"], user, streaming=False) as client:
        task, _ = await last_task_of(client, user_message(text("hi")), MessageSendConfiguration(blocking=False))
        assert task.status.state in (TaskState.submitted, TaskState.working)
        for _ in range(200):
            current = await client.get_task(TaskQueryParams(id=task.id))
            if current.status.state != TaskState.working:
                break
            await asyncio.sleep(0.05)
    assert current.status.state == TaskState.completed
    assert current.artifacts[0].parts[0].root.text.split() == ["slowly"] * 20


async def last_task_of(client: Client, message: Message, configuration: MessageSendConfiguration) -> tuple[Task, Any]:
    async for event in client.send_message(message, configuration=configuration):
        assert isinstance(event, tuple)
        return event
    raise AssertionError("no answer")
