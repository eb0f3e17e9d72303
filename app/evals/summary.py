"""An eval run's figures, computed from its scored results (nothing is kept that these cannot rebuild)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PASS = 0.5
"""A check passes at a score of at least this (binary checks score 0 or 1; graded ones in between)."""
TIE = 1e-9


@dataclass(frozen=True, slots=True)
class Scored:
    item_id: str
    position: int
    version: int
    score: float | None
    scores: Sequence[dict[str, Any]]
    tokens: int
    latency_ms: int
    turn_status: str | None


def version_figures(results: Sequence[Scored]) -> dict[str, Any]:
    by_check: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for check in result.scores:
            by_check[str(check["type"])].append(float(check["score"]))
    means = [r.score for r in results if r.score is not None]
    latencies = sorted(r.latency_ms for r in results)
    return {
        "items": len(results),
        "mean_score": round(sum(means) / len(means), 4) if means else None,
        "checks": {
            name: {
                "pass_rate": round(sum(s >= PASS for s in scores) / len(scores), 4),
                "mean": round(sum(scores) / len(scores), 4),
                "count": len(scores),
            }
            for name, scores in sorted(by_check.items())
        },  # fmt: skip
        "tokens": sum(r.tokens for r in results),
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        "turns": _count(r.turn_status or "unknown" for r in results),
    }


def compare(candidate: Sequence[Scored], baseline: Sequence[Scored]) -> dict[str, Any]:
    """Per item, the candidate's score against the baseline's: wins, losses, ties and what changed."""
    before = {r.item_id: r for r in baseline}
    wins = losses = ties = 0
    changed = []
    for result in sorted(candidate, key=lambda r: r.position):
        other = before.get(result.item_id)
        if other is None or result.score is None or other.score is None:
            continue
        delta = result.score - other.score
        if abs(delta) <= TIE:
            ties += 1
            continue
        wins, losses = (wins + 1, losses) if delta > 0 else (wins, losses + 1)
        changed.append({"item_id": result.item_id, "position": result.position, "score": result.score,
                        "baseline_score": other.score})  # fmt: skip
    return {"wins": wins, "losses": losses, "ties": ties, "changed": changed}


def percentile(sorted_values: Sequence[int], p: float) -> int | None:
    """Nearest-rank percentile."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def mean_of(scores: Sequence[float]) -> float | None:
    return round(sum(scores) / len(scores), 4) if scores else None


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return dict(sorted(counts.items()))
