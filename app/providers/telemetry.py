"""What a model call and a tool call tell the metrics and the traces (GenAI semantic conventions).

Counted once per call, never per streamed token: a text delta costs one `None` check here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind

from app.core import tracing
from app.core.metrics import PROVIDER_ERRORS, TIME_TO_FIRST_TOKEN, TOKENS, TOOL_CALLS
from app.providers.base import ModelResponse


class ModelCall:
    __slots__ = ("_first_text_seen", "_span", "_started", "model", "provider")

    def __init__(self, provider: str, model: str, span: Span | None) -> None:
        self.provider = provider
        self.model = model
        self._span = span
        self._started = time.perf_counter()
        self._first_text_seen = False

    def text(self) -> bool:
        """Note text from the model; True for the call's first."""
        if self._first_text_seen:
            return False
        self._first_text_seen = True
        TIME_TO_FIRST_TOKEN.labels(provider=self.provider).observe(time.perf_counter() - self._started)
        return True

    def finished(self, response: ModelResponse) -> None:
        TOKENS.labels(provider=self.provider, model=self.model, kind="input").inc(response.input_tokens)
        TOKENS.labels(provider=self.provider, model=self.model, kind="output").inc(response.output_tokens)
        if self._span is not None:
            self._span.set_attribute("gen_ai.usage.input_tokens", response.input_tokens)
            self._span.set_attribute("gen_ai.usage.output_tokens", response.output_tokens)
            if response.stop_reason:
                self._span.set_attribute("gen_ai.response.finish_reasons", [response.stop_reason])

    def failed(self, code: str) -> None:
        PROVIDER_ERRORS.labels(provider=self.provider, code=code).inc()
        tracing.set_error(self._span, code)


@contextmanager
def model_call(provider: str, model: str, max_tokens: int) -> Iterator[ModelCall]:
    """`chat {model}`: one span and the metrics of one model call."""
    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
    }
    with tracing.span(f"chat {model}", attributes, kind=SpanKind.CLIENT) as span:
        yield ModelCall(provider, model, span)


@contextmanager
def tool_call(name: str, call_id: str, *, mcp: bool, parent: Context | None = None) -> Iterator[Span | None]:
    """`execute_tool {name}`: the span of one tool execution (a child of `parent` when the caller's
    context is not the turn's: a tool Claude Code calls back into runs in the SDK's reader task)."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "extension" if mcp else "function",
    }
    with tracing.span(f"execute_tool {name}", attributes, parent=parent) as span:
        yield span


def tool_settled(name: str, *, is_error: bool, denied: bool = False) -> None:
    """`agent_runtime_tool_calls_total`: outcome `ok`, `error` (the tool failed) or `denied` (policy or human)."""
    outcome = "denied" if denied else "error" if is_error else "ok"
    TOOL_CALLS.labels(tool=name, outcome=outcome).inc()
