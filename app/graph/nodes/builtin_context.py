"""The built-in context's prompt: the session's conversation, compacted to fit the model's window.

The algorithm is `app.context.compactor.fit_prompt`; this module hands it the run's state and
records what it did through the turn's journal (summaries, usage `kind: "compaction"`, events).
"""

from __future__ import annotations

from typing import Any

from app.agents.config import AgentConfig
from app.context.compaction import CompactionPolicy, StoredSummary
from app.context.compactor import Budget, fit_prompt
from app.graph.context import TurnContext
from app.graph.state import TurnState
from app.providers.base import ModelResponse
from app.providers.context_windows import context_window
from app.runtime.port.events import ContextCompacted, UsageEvent
from app.runtime.port.journal import ModelUsage, TurnJournal


class _JournalPort:
    """`CompactionPort` over the turn's journal."""

    def __init__(self, journal: TurnJournal, model: str) -> None:
        self._journal = journal
        self._model = model

    async def latest_summary(self) -> StoredSummary | None:
        return await self._journal.latest_summary()

    async def save_summary(self, summary: StoredSummary, *, tokens: int) -> None:
        await self._journal.save_summary(summary, tokens=tokens)

    def record_usage(self, response: ModelResponse) -> None:
        self._journal.event(
            UsageEvent(input_tokens=response.input_tokens, output_tokens=response.output_tokens, kind="compaction")
        )
        self._journal.model_call(
            ModelUsage(self._model, response.input_tokens, response.output_tokens, kind="compaction")
        )

    def compacted(self, fields: dict[str, Any]) -> None:
        self._journal.event(ContextCompacted(**fields))


def compaction_policy(config: AgentConfig) -> CompactionPolicy:
    model, compaction = config.model, config.context.compaction
    return CompactionPolicy(
        strategy=compaction.strategy,
        trigger_ratio=compaction.trigger_ratio,
        keep_last_messages=compaction.keep_last_messages,
        window=context_window(model.provider, model.name or "", model.context_window),
        provider=model.provider,
    )


async def builtin_prompt(state: TurnState, ctx: TurnContext) -> dict[str, Any]:
    """The state update of assemble_context without a Context Engine: system, prompt, and what compaction cost."""
    system = ctx.config.system_prompt
    model_calls = state.get("model_calls", 0)
    fitted = await fit_prompt(
        system,
        [*state.get("history", []), *state.get("new_messages", [])],
        policy=compaction_policy(ctx.config),
        summary=state.get("summary"),
        summary_loaded=state.get("summary_loaded", False),
        port=_JournalPort(ctx.journal, str(ctx.model.get("name") or ctx.model["provider"])),
        provider=ctx.provider,
        model=ctx.model,
        budget=Budget(state["max_output_tokens"] - state.get("output_tokens", 0), model_calls),
    )
    update: dict[str, Any] = {"system": system, "prompt": fitted.prompt}
    if fitted.summary_loaded != state.get("summary_loaded", False) or fitted.summary is not state.get("summary"):
        update |= {"summary": fitted.summary, "summary_loaded": fitted.summary_loaded}
    if fitted.restored_calls or fitted.model_calls:
        update |= {
            "model_calls": model_calls + fitted.restored_calls + fitted.model_calls,
            "input_tokens": state.get("input_tokens", 0) + fitted.input_tokens,
            "output_tokens": state.get("output_tokens", 0) + fitted.output_tokens,
        }
    return update
