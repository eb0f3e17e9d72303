"""Hard per-turn budgets (DESIGN.md "Budgets and quota"): pure arithmetic on what a turn has spent.

`max_total_tokens` counts input + output of every model call of the turn, `max_output_tokens` the
output. Before every model call the turn checks what is left; the call's own `max_tokens` is capped
by it (the total cap also leaves room for the call's estimated prompt). A turn whose budget is
spent, or whose call stopped because the budget capped it, ends `budget_exceeded`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Budget:
    max_output_tokens: int
    max_total_tokens: int | None


@dataclass(frozen=True, slots=True)
class Spent:
    input_tokens: int
    output_tokens: int
    loops: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "loops": self.loops}


def spent_reason(budget: Budget, spent: Spent) -> str | None:
    """Why no further model call fits the budget, or None while one does."""
    if spent.output_tokens >= budget.max_output_tokens:
        return f"the turn spent {spent.output_tokens} of its {budget.max_output_tokens} output tokens"
    if budget.max_total_tokens is not None and spent.total >= budget.max_total_tokens:
        return f"the turn spent {spent.total} of its {budget.max_total_tokens} tokens"
    return None


def call_cap(budget: Budget, spent: Spent, *, model_max_tokens: int, prompt_tokens: int) -> int:
    """The `max_tokens` the next call may use (< 1: the budget cannot pay for the call's prompt)."""
    cap = min(model_max_tokens, budget.max_output_tokens - spent.output_tokens)
    if budget.max_total_tokens is not None:
        cap = min(cap, budget.max_total_tokens - spent.total - prompt_tokens)
    return cap


def overspent(budget: Budget, spent: Spent) -> str | None:
    """After a call: whether it went past a limit (a prompt larger than estimated)."""
    if spent.output_tokens > budget.max_output_tokens:
        return f"the turn spent {spent.output_tokens} of its {budget.max_output_tokens} output tokens"
    if budget.max_total_tokens is not None and spent.total > budget.max_total_tokens:
        return f"the turn spent {spent.total} of its {budget.max_total_tokens} tokens"
    return None


def exceeded(code: str, message: str, spent: Spent) -> dict[str, Any]:
    """`turn.ended.error` of a turn stopped by its budget (`budget_exceeded`) or the quota (`quota_exceeded`)."""
    return {"code": code, "message": message, "spent": spent.as_dict()}
