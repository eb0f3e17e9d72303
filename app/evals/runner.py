"""Runs an eval: every item of its dataset as a real governed turn, per version, then scores it.

Each (item, version) gets a result row first, with the session and turn ids chosen then, so a
run continued by another replica after a crash finds the turns already started (the engine
continues those) and starts only the rest. A turn is scored once it has ended; a turn that stopped
for a human's approval is scored as it stands and cancelled, so no eval leaves an approval pending.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from app.evals.checks import JUDGE, REFERENCE, Outcome, Score, score
from app.evals.judge import judge
from app.evals.repository import EvalStore, ResultRow
from app.models import DatasetItem, EvalRun
from app.providers.registry import ProviderRegistry

log = logging.getLogger(__name__)
TURN_POLL_SECONDS = 0.25


@dataclass(frozen=True, slots=True)
class EndedTurn:
    status: str
    text: str
    output: Any
    input_tokens: int
    output_tokens: int
    created_at: datetime
    ended_at: datetime | None
    tool_calls: Sequence[dict[str, Any]]


class EvalTurns(Protocol):
    """How the runner reaches the engine: start an item's turn, read it once ended, cancel it."""

    async def start(self, run: EvalRun, item: DatasetItem, result: ResultRow) -> str | None:
        """Start the result's turn (in an eval session of its own); the refusal's detail, or None."""
        ...

    async def ended(self, tenant_id: str, turn_id: uuid.UUID) -> EndedTurn | None:
        """The turn once it has ended or waits for a human; None while it runs."""
        ...

    async def stop(self, tenant_id: str, owner_sub: str, turn_id: uuid.UUID) -> None: ...


class EvalRunner:
    def __init__(self, store: EvalStore, turns: EvalTurns, registry: ProviderRegistry) -> None:
        self.store = store
        self.turns = turns
        self.registry = registry

    async def run(self, eval_id: uuid.UUID, still_mine: Callable[[], Awaitable[bool]]) -> None:
        run = await self.store.run(eval_id)
        if run is None:
            return
        items = await self.store.items(run.tenant_id, run.dataset_id)
        versions = [run.agent_version] + ([run.baseline_version] if run.baseline_version is not None else [])
        gate = asyncio.Semaphore(run.concurrency)

        async def one(item: Any, version: int) -> None:
            async with gate:
                if not await still_mine():
                    return
                await self._item(run, item, version)

        await asyncio.gather(*(one(item, v) for item in items for v in versions))
        if await still_mine():
            await self.store.finish(eval_id)

    async def _item(self, run: Any, item: Any, version: int) -> None:
        result = await self.store.result_for(run, item, version)
        if result is None or result.status != "pending":
            return
        if not await self.store.turn_exists(run.tenant_id, result.turn_id):
            refused = await self.turns.start(run, item, result)
            if refused is not None:
                await self.store.scored(result, turn_status="refused", scores=[Score("start", 0.0, refused)], tokens=0,
                                        latency_ms=0)  # fmt: skip
                return
        ended = await self._ended(run, result)
        if ended is None:
            return
        if ended.status == "interrupted":
            await self.turns.stop(run.tenant_id, run.owner_sub, result.turn_id)
        outcome = Outcome(
            status=ended.status, text=ended.text, output=ended.output, tool_calls=ended.tool_calls,
            tokens=ended.input_tokens + ended.output_tokens, latency_ms=_ms(ended.created_at, ended.ended_at),
        )  # fmt: skip
        scores = await self._scores(run, result, item, outcome)
        await self.store.scored(result, turn_status=ended.status, scores=scores, tokens=outcome.tokens,
                                latency_ms=outcome.latency_ms)  # fmt: skip

    async def _ended(self, run: Any, result: ResultRow) -> EndedTurn | None:
        while True:
            ended = await self.turns.ended(run.tenant_id, result.turn_id)
            if ended is not None:
                return ended
            if await self.store.cancelled(run.id):
                await self.turns.stop(run.tenant_id, run.owner_sub, result.turn_id)
                return None
            await asyncio.sleep(TURN_POLL_SECONDS)

    async def _scores(self, run: Any, result: ResultRow, item: Any, outcome: Outcome) -> list[Score]:
        checks = list(item.expected.get("checks", []))
        reference = item.expected.get("reference")
        if not checks and reference is not None:
            checks = [{"type": REFERENCE}]
        scores = []
        for check in checks:
            if check["type"] != JUDGE:
                scores.append(score(check, outcome, reference))
                continue
            judged = await judge(self.registry, run.tenant_id, check, question=item.input, answer=outcome.text)
            if judged.input_tokens or judged.output_tokens:
                await self.store.judge_usage(run, result, judged.model, judged.input_tokens, judged.output_tokens)
            scores.append(judged.score)
        return scores


def _ms(start: datetime, end: datetime | None) -> int:
    return 0 if end is None else max(0, int((end - start).total_seconds() * 1000))
