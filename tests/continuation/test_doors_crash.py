"""SIGKILL the replica in the middle of a call through a protocol door: the other replica continues the
turn, and the client that picks it up there in its own protocol gets the whole answer — A2A's
`tasks/resubscribe`, MCP's same `tools/call` again on the same session."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import httpx
import httpx2
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TaskIdParams, TaskState, TextPart
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.continuation.support import WAIT_SECONDS, wait_for
from tests.factories import create_agent, scripted_config
from tests.live_server import LiveServer

pytestmark = pytest.mark.timeout(180)

WORDS = " ".join(f"word{i}" for i in range(40))


async def _slow_agent(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    config = scripted_config({"text": WORDS})
    config["model"]["chunk_delay_ms"] = 100  # still streaming when the kill lands after a few deltas
    return await create_agent(client, headers, config, name="slow")


async def test_a2a_resubscribe_on_the_survivor_sees_the_whole_answer(
    replicas: list[LiveServer], clients: list[httpx.AsyncClient], alice: dict[str, str]
) -> None:
    (a, b), (on_a, _) = replicas, clients
    agent = await _slow_agent(on_a, alice)
    seen: list[Any] = []
    async with httpx.AsyncClient(headers=alice, timeout=60) as http:
        card = await A2ACardResolver(http, f"{a.base_url}/a2a/{agent['id']}").get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        message = Message(role=Role.user, parts=[Part(root=TextPart(text="go"))], message_id=uuid.uuid4().hex)

        async def stream() -> None:
            async for event in client.send_message(message):
                seen.append(event)

        streaming = asyncio.create_task(stream())
        await wait_for(lambda: len(seen) >= 4, "a few deltas streamed by A")
        a.kill()
        with contextlib.suppress(Exception):
            await streaming
        task_id = seen[0][0].id

        card_b = await A2ACardResolver(http, f"{b.base_url}/a2a/{agent['id']}").get_agent_card()
        survivor = ClientFactory(ClientConfig(httpx_client=http)).create(card_b)
        replayed = [event async for event in survivor.resubscribe(TaskIdParams(id=task_id))]
    task, last = replayed[-1]
    assert last.final is True
    assert task.status.state == TaskState.completed
    assert task.artifacts[0].parts[0].root.text == WORDS


async def test_mcp_calling_again_on_the_survivor_returns_the_continued_turn(
    replicas: list[LiveServer], clients: list[httpx.AsyncClient], alice: dict[str, str]
) -> None:
    (a, b), (on_a, on_b) = replicas, clients
    await _slow_agent(on_a, alice)
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    arguments = {"input": "go", "session": "crash-1"}
    async with httpx2.AsyncClient(headers=alice, timeout=60) as http:

        async def call(base_url: str) -> Any:
            async with Client(streamable_http_client(f"{base_url}/mcp", http_client=http), cache=None) as client:
                return await client.call_tool("slow", arguments, progress_callback=on_progress)

        first = asyncio.create_task(call(a.base_url))
        await wait_for(lambda: len(progress) >= 3, "a few deltas streamed by A")
        a.kill()
        with contextlib.suppress(Exception):
            await first
        result = await asyncio.wait_for(call(b.base_url), timeout=WAIT_SECONDS)
    assert result.content[0].text == WORDS
    assert result.structured_content["status"] == "completed"
    turns = (await on_b.get(f"/sessions/{result.structured_content['session_id']}/turns", headers=alice)).json()
    assert [t["id"] for t in turns["items"]] == [result.structured_content["turn_id"]]
    assert turns["items"][0]["channel"] == "mcp"
