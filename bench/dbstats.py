"""Database work per turn: counters read before and after a load, divided by its turns.

One helper for `bench.profile --db-stats` (PostgreSQL's own counters of the bench database) and
`bench.run --db-stats` (statements and commits of one server, counted by bench/pgwire.py).
"""

from __future__ import annotations

import asyncio

from bench.db import BenchDatabase

STATS_SETTLE_SECONDS = 11.0


async def settled_counters(db: BenchDatabase) -> dict[str, int]:
    """`db.stats()` once the load has been idle long enough for every backend to have published them."""
    await asyncio.sleep(STATS_SETTLE_SECONDS)  # backends publish their counters within 10 s of going idle
    return await db.stats()


def per_second(before: dict[str, int], after: dict[str, int], seconds: float) -> dict[str, float]:
    """Each counter's rate over `seconds` (a process's background work while no turn runs)."""
    return {key: (after[key] - before.get(key, 0)) / seconds for key in after} if seconds > 0 else {}


def per_turn(
    before: dict[str, int],
    after: dict[str, int],
    turns: int,
    *,
    background: dict[str, float] | None = None,
    seconds: float = 0.0,
) -> dict[str, float]:
    """Each counter's change divided by `turns`, counters that did not change left out; with
    `background` (rates, `per_second`), what that rate accounts for over the load's `seconds` is taken
    off first (never below nothing)."""
    if turns <= 0:
        return {}
    rates = background or {}
    deltas = {key: max(0.0, after[key] - before.get(key, 0) - rates.get(key, 0.0) * seconds) for key in sorted(after)}
    return {key: round(delta / turns, 2) for key, delta in deltas.items() if delta}


def per_turn_text(values: dict[str, float], *, title: str) -> str:
    return "\n".join([title, *(f"  {value:8.2f}  {key}" for key, value in values.items())])
