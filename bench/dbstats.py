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


def per_turn(before: dict[str, int], after: dict[str, int], turns: int) -> dict[str, float]:
    """Each counter's change divided by `turns`, counters that did not change left out."""
    if turns <= 0:
        return {}
    deltas = {key: after[key] - before.get(key, 0) for key in sorted(after)}
    return {key: round(delta / turns, 2) for key, delta in deltas.items() if delta}


def per_turn_text(values: dict[str, float], *, title: str) -> str:
    return "\n".join([title, *(f"  {value:8.2f}  {key}" for key, value in values.items())])
