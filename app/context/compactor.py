"""Fitting the built-in context into the model's window: summarise (or drop) the older messages.

`fit_prompt` is called by the built-in context's assembly with the session's whole conversation
(the stored history plus this run's messages, in storage order). While the prompt stays under
`trigger_ratio` × window it is the conversation itself (long tool results clipped); past it, the
latest stored summary replaces the messages it covers; still past it, the messages before the last
`keep_last_messages` are summarised, together with that summary, by the agent's own provider, and
the new summary is stored with the range of messages it covers. If summarising fails, is out of
budget, or the strategy is `window`, the oldest messages are dropped instead.

Storage, usage and events go through `CompactionPort`, so the algorithm knows no tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.context.compaction import (
    SUMMARY_SYSTEM_PROMPT,
    CompactionPolicy,
    StoredSummary,
    clip_tool_results,
    prompt_tokens,
    summary_chunks,
    summary_cut,
    summary_message,
    summary_request,
    window_start,
)
from app.providers.base import ChatMessage, ModelRequest, ModelResponse, Provider, ProviderError
from app.providers.context_windows import estimate_tokens


class CompactionPort(Protocol):
    """What compaction needs of the turn: the stored summaries, and where its calls are recorded."""

    async def latest_summary(self) -> StoredSummary | None: ...

    async def save_summary(self, summary: StoredSummary, *, tokens: int) -> None:
        """Store it (after everything the turn staged, so the messages it covers have their ids)."""
        ...

    def record_usage(self, response: ModelResponse) -> None:
        """A summarisation call's usage (`kind: "compaction"`): a usage row and a `usage` event."""
        ...

    def compacted(self, fields: dict[str, Any]) -> None:
        """Emit `context.compacted`."""
        ...


@dataclass(slots=True)
class Fitted:
    prompt: list[ChatMessage]
    summary: StoredSummary | None
    """The summary in force now (to keep in the run's state)."""
    summary_loaded: bool
    restored_calls: int = 0
    """Summarisation calls of earlier runs, counted by the summary read now (the call index skips them)."""
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    """Summarisation calls made now (they count in the turn's budget and the session's call index)."""
    usage: list[ModelResponse] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Budget:
    output_tokens_left: int
    call_index: int


async def fit_prompt(
    system: str,
    conversation: Sequence[ChatMessage],
    *,
    policy: CompactionPolicy,
    summary: StoredSummary | None,
    summary_loaded: bool,
    port: CompactionPort,
    provider: Provider,
    model: dict[str, Any],
    budget: Budget,
) -> Fitted:
    """The prompt for the next model call (see the module docstring)."""
    prompt = _clipped(_with_summary(summary, conversation), policy)
    if prompt_tokens(system, prompt, policy.provider) <= policy.trigger_tokens:
        return Fitted(prompt, summary, summary_loaded)
    restored = 0
    if not summary_loaded:
        summary, summary_loaded = await port.latest_summary(), True
        restored = summary.model_calls if summary else 0
        prompt = _clipped(_with_summary(summary, conversation), policy)
        if prompt_tokens(system, prompt, policy.provider) <= policy.trigger_tokens:
            return Fitted(prompt, summary, summary_loaded, restored)
    before = prompt
    fitted = Fitted(prompt, summary, summary_loaded, restored)
    if policy.strategy == "summarize":
        await _summarise(system, conversation, policy=policy, port=port, provider=provider, model=model,
                         budget=budget, fitted=fitted)  # fmt: skip
    strategy = "summarize" if fitted.summary is not summary else "window"
    if strategy == "window" or prompt_tokens(system, fitted.prompt, policy.provider) > policy.trigger_tokens:
        start = window_start(system, fitted.prompt, policy.trigger_tokens, policy.provider)
        fitted.prompt = fitted.prompt[start:]
    port.compacted(
        {
            "strategy": strategy,
            "messages_before": len(before),
            "messages_after": len(fitted.prompt),
            "tokens_before": prompt_tokens(system, before, policy.provider),
            "tokens_after": prompt_tokens(system, fitted.prompt, policy.provider),
        }
    )
    return fitted


def _clipped(messages: list[ChatMessage], policy: CompactionPolicy) -> list[ChatMessage]:
    return clip_tool_results(messages, policy.tool_result_tokens, policy.provider)


def _with_summary(summary: StoredSummary | None, conversation: Sequence[ChatMessage]) -> list[ChatMessage]:
    if summary is None:
        return list(conversation)
    return [summary_message(summary.content), *conversation[summary.message_count :]]


async def _summarise(
    system: str,
    conversation: Sequence[ChatMessage],
    *,
    policy: CompactionPolicy,
    port: CompactionPort,
    provider: Provider,
    model: dict[str, Any],
    budget: Budget,
    fitted: Fitted,
) -> None:
    """Summarise the previous summary plus everything but the kept tail; on failure leave `fitted` as is."""
    previous = fitted.summary
    start = previous.message_count if previous else 0
    cut = summary_cut(conversation, policy.keep_last_messages)
    if cut <= start:
        return
    text = previous.content if previous else None
    calls = 0
    for chunk in summary_chunks(text, conversation[start:cut], policy):
        max_tokens = min(policy.summary_tokens, budget.output_tokens_left - fitted.output_tokens)
        if max_tokens < 1:
            return
        request = ModelRequest(
            model=model, system=SUMMARY_SYSTEM_PROMPT, messages=[summary_request(text, chunk)], tools=[],
            max_tokens=max_tokens, call_index=budget.call_index + fitted.restored_calls + fitted.model_calls,
        )  # fmt: skip
        try:
            response = await _complete(provider, request)
        except ProviderError:
            return
        fitted.model_calls += 1
        fitted.input_tokens += response.input_tokens
        fitted.output_tokens += response.output_tokens
        port.record_usage(response)
        calls += 1
        text = response.text.strip()
        if not text:
            return
    assert text is not None
    summary = StoredSummary(text, cut, (previous.model_calls if previous else 0) + calls)
    await port.save_summary(summary, tokens=estimate_tokens(text, policy.provider))
    fitted.summary = summary
    fitted.prompt = _clipped(_with_summary(summary, conversation), policy)


async def _complete(provider: Provider, request: ModelRequest) -> ModelResponse:
    """The whole reply of a summarisation call (its text is not streamed to the client)."""
    async for item in provider.stream(request):
        if isinstance(item, ModelResponse):
            return item
    raise ProviderError("provider_error", "the model stream ended without a response")
