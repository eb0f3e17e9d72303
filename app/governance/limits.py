"""Tenant ceilings and the effective limits of a turn: pure functions, no I/O.

Effective per-turn limits are the minimum of the tenant's ceiling, the agent's `limits` and the
turn request's `limits` (DESIGN.md "Budgets and quota"). An agent that sets no limit gets the
service default for loops and output tokens and no total-token cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_LOOPS = 8
DEFAULT_MAX_OUTPUT_TOKENS = 20_000
AGENT_LIMIT_FIELDS = ("max_loops", "max_output_tokens", "max_total_tokens")


@dataclass(frozen=True, slots=True)
class Ceilings:
    """A tenant's ceilings; None is no ceiling."""

    max_loops: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_concurrent_turns: int | None = None
    quota_period: str | None = None
    quota_tokens: int | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any] | None) -> Ceilings:
        if row is None:
            return cls()
        return cls(**{name: row.get(name) for name in cls.__dataclass_fields__})

    def ceiling(self, field: str) -> int | None:
        value: int | None = getattr(self, field)
        return value


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """What one turn may spend."""

    max_loops: int
    max_output_tokens: int
    max_total_tokens: int | None


@dataclass(frozen=True, slots=True)
class Excess:
    """An agent limit above the tenant's ceiling."""

    field: str
    limit: int
    ceiling: int


def smallest(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def effective_limits(ceilings: Ceilings, agent: Mapping[str, Any], requested: Mapping[str, Any]) -> TurnLimits:
    loops = smallest(ceilings.max_loops, agent.get("max_loops") or DEFAULT_MAX_LOOPS, requested.get("max_loops"))
    output = smallest(
        ceilings.max_output_tokens,
        agent.get("max_output_tokens") or DEFAULT_MAX_OUTPUT_TOKENS,
        requested.get("max_output_tokens"),
    )
    total = smallest(ceilings.max_total_tokens, agent.get("max_total_tokens"), requested.get("max_total_tokens"))
    return TurnLimits(
        max_loops=loops or DEFAULT_MAX_LOOPS,
        max_output_tokens=output or DEFAULT_MAX_OUTPUT_TOKENS,
        max_total_tokens=total,
    )


def excesses(ceilings: Ceilings, agent: Mapping[str, Any]) -> list[Excess]:
    """The limits an agent sets explicitly above the ceilings (a limit it leaves unset never exceeds)."""
    found = []
    for field in AGENT_LIMIT_FIELDS:
        limit, ceiling = agent.get(field), ceilings.ceiling(field)
        if limit is not None and ceiling is not None and limit > ceiling:
            found.append(Excess(field, int(limit), ceiling))
    return found
