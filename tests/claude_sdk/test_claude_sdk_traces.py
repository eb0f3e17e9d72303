"""The Claude SDK runtime's spans: `chat {model}` per model call Claude Code makes, `execute_tool {name}` per
call we run for it, both in the turn's `invoke_agent` trace (GenAI semantic conventions, as on LangGraph)."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, turn
from tests.observability.test_traces import _named, _parent_id, _spans_until, exporter

__all__ = ["exporter"]


async def test_a_tool_turn_is_one_trace_of_agent_chat_and_tool_spans(
    exporter: InMemorySpanExporter, api: httpx.AsyncClient, alice: dict[str, str], anthropic: MockAnthropic
) -> None:
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="Echoing.", tool_calls=[("mcp__agent__echo", {"text": "traced"})]), Step(text="done"))
    exporter.clear()

    frames = await turn(api, alice, session_id, "echo")
    spans = await _spans_until(exporter, "invoke_agent")

    ended = frames[-1].data
    (agent,) = _named(spans, "invoke_agent")
    chats = _named(spans, "chat claude-sonnet-4-5")
    assert len(chats) == 2
    for chat in chats:
        assert _parent_id(chat) == agent.context.span_id
        assert chat.kind == SpanKind.CLIENT
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert (
        sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats if c.attributes)
        == ended["usage"]["output_tokens"]
    )
    (tool,) = _named(spans, "execute_tool echo")
    assert _parent_id(tool) == agent.context.span_id
    assert tool.context.trace_id == agent.context.trace_id
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.id"] == of(frames, "tool_call.requested")[0]["tool_call_id"]
