"""Traces with an in-memory exporter: span names, parents and GenAI attributes of a tool turn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from app.core import tracing
from app.settings import AnthropicSettings, Settings
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    tracing.configure_tracing(service_name="agent-runtime-test", exporter=memory)
    try:
        yield memory
    finally:
        tracing.shutdown_tracing()


def _named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def _spans_until(exporter: InMemorySpanExporter, name: str) -> tuple[ReadableSpan, ...]:
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while not _named(spans := exporter.get_finished_spans(), name):
            await asyncio.sleep(0.01)
    return spans


async def test_a_tool_turn_is_one_trace_of_http_agent_chat_tool_and_database_spans(
    exporter: InMemorySpanExporter, settings: Settings, alice: dict[str, str]
) -> None:
    echo = {"text": "checking", "tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}
    async with running_app(settings) as (_, client):
        session = await scripted_session(client, alice, echo, {"text": "done now"})
        exporter.clear()
        frames = await read_turn(
            client,
            "POST",
            f"/sessions/{session['id']}/turns",
            json={"input": "x"},
            headers={**alice, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        )
        spans = await _spans_until(exporter, "invoke_agent")
    ended = frames[-1].data

    (server,) = _named(spans, "POST /sessions/{session_id}/turns")
    assert server.kind == SpanKind.SERVER
    assert server.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C  # continued from `traceparent`
    assert server.attributes["http.route"] == "/sessions/{session_id}/turns"
    assert server.attributes["http.response.status_code"] == 200

    (agent,) = _named(spans, "invoke_agent")
    assert _parent_id(agent) == server.context.span_id
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.conversation.id"] == session["id"]
    assert agent.attributes["gen_ai.provider.name"] == "scripted"
    assert agent.attributes["agent_runtime.turn.id"] == ended["turn_id"]
    assert agent.attributes["agent_runtime.turn.status"] == "completed"

    chats = _named(spans, "chat scripted")
    assert len(chats) == 2
    for chat in chats:
        assert _parent_id(chat) == agent.context.span_id
        assert chat.kind == SpanKind.CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "scripted"
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == ended["usage"]["output_tokens"]
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == ended["usage"]["input_tokens"]

    (tool,) = _named(spans, "execute_tool echo")
    assert _parent_id(tool) == agent.context.span_id
    assert tool.attributes["gen_ai.tool.name"] == "echo"
    assert (
        tool.attributes["gen_ai.tool.call.id"]
        == frames[[f.event for f in frames].index("tool_call.requested")].data["tool_call_id"]
    )
    assert tool.status.status_code != StatusCode.ERROR

    database = [s for s in spans if s.attributes and s.attributes.get("db.system.name") == "postgresql"]
    assert database, "no database spans"
    assert {s.context.trace_id for s in database} == {server.context.trace_id}
    assert any(s.attributes["db.operation.name"] in ("INSERT", "WITH") for s in database)
    assert all(s.attributes.get("db.query.text") != "hi" for s in database)


async def test_a_failed_model_call_marks_its_spans(
    exporter: InMemorySpanExporter, settings: Settings, alice: dict[str, str]
) -> None:
    failing = make_settings(settings.database_url, Path(settings.data_dir), anthropic=AnthropicSettings(api_key=None))
    config = {"model": {"provider": "anthropic", "name": "claude-x"}, "system_prompt": "x"}
    async with running_app(failing) as (_, client):
        session = await create_session(client, alice, (await create_agent(client, alice, config))["id"])
        await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
        spans = await _spans_until(exporter, "invoke_agent")
    (chat,) = _named(spans, "chat claude-x")
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes["error.type"] == "provider_not_configured"
    (agent,) = _named(spans, "invoke_agent")
    assert agent.attributes["error.type"] == "provider_not_configured"


async def test_with_tracing_off_no_span_is_made(client: httpx.AsyncClient) -> None:
    assert not tracing.enabled()
    first, second = tracing.span("a"), tracing.span("b", {"x": 1})
    assert first is second  # one shared no-op: nothing is allocated per span
    with first as span:
        assert span is None
