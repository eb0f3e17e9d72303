"""The state of one turn as it moves through the graph. Nodes return partial updates."""

from __future__ import annotations

from typing import Any, TypedDict

from app.context.compaction import StoredSummary
from app.governance.budget import Budget, Spent
from app.providers.base import ChatMessage, ToolCall
from app.runtime.port.events import EndStatus
from app.runtime.port.journal import Continued, HumanDecision
from app.tools.base import ToolResult

__all__ = ["HumanDecision", "TurnState"]


class TurnState(TypedDict, total=False):
    input: str
    max_loops: int
    max_output_tokens: int
    max_total_tokens: int | None
    resume: bool
    continued: Continued | None
    """Set when the run continues a turn whose run was lost (see `TurnRun.continued`)."""
    answered: bool
    """A continued run whose turn's last stored message is the model's final answer: it only closes the turn."""
    decisions: dict[str, HumanDecision]
    """Human decisions by tool_call_id, handed in when an approval resumes the turn."""
    history: list[ChatMessage]
    """The session's stored conversation, loaded once per run (includes this turn's user message)."""
    new_messages: list[ChatMessage]
    """Assistant and tool messages added during this run, folded into every later prompt."""
    summary: StoredSummary | None
    """The compaction summary in force (built-in context): it stands for the conversation's first messages."""
    summary_loaded: bool
    """Whether this run has read the stored summary (only done once the conversation outgrows the trigger)."""
    system: str
    prompt: list[ChatMessage]
    pending: list[ToolCall]
    results: dict[str, ToolResult]
    last_text: str
    loop_count: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    status: EndStatus | None
    error: dict[str, str] | None
    final_output: str | None
    output: dict[str, Any] | None
    """The final answer parsed against the turn's output schema."""
    output_repairs: int
    """Answers that missed the output schema and were sent back once with the errors."""
    repairing: bool
    """The last answer missed the schema: the loop goes round once more instead of completing."""


def budget_of(state: TurnState) -> Budget:
    return Budget(state["max_output_tokens"], state.get("max_total_tokens"))


def spent_of(state: TurnState) -> Spent:
    return Spent(state.get("input_tokens", 0), state.get("output_tokens", 0), state.get("loop_count", 0))
