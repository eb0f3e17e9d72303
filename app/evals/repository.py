from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.agents.repository import AgentVersionRepository
from app.core.db import unit_of_work
from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.core.sql import INTEGRITY_ERRORS
from app.errors import NotFound
from app.evals.checks import Score
from app.models import (
    Dataset,
    DatasetItem,
    EvalResult,
    EvalRun,
    PolicyDecision,
    Runner,
    Session,
    ToolExecution,
    Turn,
    Usage,
)
from app.models.base import utcnow
from app.tools.recorded import RECORDED_KEY


@dataclass(frozen=True, slots=True)
class CancelledRun:
    """A run just cancelled: its turns still pending, to stop as its owner (whose sessions they run in;
    an admin or a dataset's owner who cancels it could not stop another user's turns)."""

    owner_sub: str
    turn_ids: list[uuid.UUID]


ENDED = ("completed", "cancelled", "failed")


class DatasetRepository(TenantRepository[Dataset]):
    """Datasets are the tenant's: every member reads them; their owner or an admin changes them."""

    model = Dataset

    async def get(self, dataset_id: uuid.UUID, *, for_update: bool = False) -> Dataset | None:
        stmt = self.readable().where(Dataset.id == dataset_id)
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def page(self, *, limit: int, cursor: str | None, name: str | None) -> list[Dataset]:
        stmt = self.readable() if name is None else self.readable().where(Dataset.name == name)
        return await self.all(
            paginate(stmt, created_at=Dataset.created_at, row_id=Dataset.id, limit=limit, cursor=cursor)
        )

    async def by_name(self, name: str) -> Dataset | None:
        return await self.first(self.readable().where(Dataset.name == name))

    async def count_items(self, dataset_id: uuid.UUID) -> int:
        stmt = select(func.count()).where(DatasetItem.tenant_id == self.tenant_id, DatasetItem.dataset_id == dataset_id)
        return int((await self.session.execute(stmt)).scalar_one())

    async def set_count(self, dataset_id: uuid.UUID, count: int) -> None:
        await self.session.execute(
            update(Dataset)
            .where(Dataset.tenant_id == self.tenant_id, Dataset.id == dataset_id)
            .values(item_count=count)
        )


class DatasetItemRepository(TenantRepository[DatasetItem]):
    model = DatasetItem

    async def page(self, dataset_id: uuid.UUID, *, after: int, limit: int) -> list[DatasetItem]:
        stmt = self.readable().where(DatasetItem.dataset_id == dataset_id, DatasetItem.position > after)
        return await self.all(stmt.order_by(DatasetItem.position).limit(limit + 1))

    async def all_of(self, dataset_id: uuid.UUID) -> list[DatasetItem]:
        stmt = self.readable().where(DatasetItem.dataset_id == dataset_id)
        return await self.all(stmt.order_by(DatasetItem.position))

    async def add_many(self, rows: list[DatasetItem]) -> None:
        self.session.add_all(rows)
        await self.session.flush()


class RecordedTurns:
    """The ended turns of sessions, with their ledgered tool calls (what `items:from-sessions` reads)."""

    def __init__(self, session: Any, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def completed_turns(self, session_id: uuid.UUID) -> list[Turn]:
        stmt = (
            select(Turn)
            .where(Turn.tenant_id == self.tenant_id, Turn.session_id == session_id, Turn.status == "completed")
            .order_by(Turn.created_at, Turn.id)
        )
        return list((await self.session.execute(stmt)).scalars().all())

    async def tool_calls(self, turn_ids: list[uuid.UUID]) -> list[ToolExecution]:
        """Calls that ran to a result: a call the policy or a human denied never ran, so it records nothing."""
        if not turn_ids:
            return []
        denied = (
            select(PolicyDecision.id)
            .where(
                PolicyDecision.tenant_id == self.tenant_id,
                PolicyDecision.turn_id == ToolExecution.turn_id,
                PolicyDecision.tool_call_id == ToolExecution.tool_call_id,
                PolicyDecision.verdict == "deny",
            )
            .exists()
        )
        stmt = (
            select(ToolExecution)
            .where(
                ToolExecution.tenant_id == self.tenant_id,
                ToolExecution.turn_id.in_(turn_ids),
                ToolExecution.status == "completed",
                ~denied,
            )
            .order_by(ToolExecution.created_at, ToolExecution.id)
        )
        return list((await self.session.execute(stmt)).scalars().all())


@dataclass(frozen=True, slots=True)
class ResultRow:
    id: uuid.UUID
    tenant_id: str
    eval_id: uuid.UUID
    item_id: uuid.UUID
    agent_version: int
    session_id: uuid.UUID
    turn_id: uuid.UUID
    status: str

    @classmethod
    def of(cls, row: EvalResult) -> ResultRow:
        return cls(row.id, row.tenant_id, row.eval_id, row.item_id, row.agent_version, row.session_id, row.turn_id,
                   row.status)  # fmt: skip


class EvalStore:
    """The runner's reads and writes, each in a short transaction of its own (a run lasts minutes)."""

    def __init__(self, factory: async_sessionmaker[AsyncSession], *, max_connections: int) -> None:
        self.factory = factory
        self.gate = asyncio.Semaphore(max_connections)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A unit of work on the API pool once one of `max_connections` is free (EVAL_MAX_CONNECTIONS):
        however many items the runs have going at once, evals never take the whole pool from requests."""
        async with self.gate, unit_of_work(self.factory) as db:
            yield db

    async def run(self, eval_id: uuid.UUID) -> EvalRun | None:
        async with self.transaction() as db:
            return await db.get(EvalRun, eval_id)

    async def items(self, tenant_id: str, dataset_id: uuid.UUID) -> list[DatasetItem]:
        async with self.transaction() as db:
            return await DatasetItemRepository(db, tenant_id).all_of(dataset_id)

    async def result_for(self, run: EvalRun, item: DatasetItem, version: int) -> ResultRow | None:
        """The item's result row on this version, made (with its session and turn ids) if missing; None
        once the run is no longer running (cancelled, or deleted with its dataset): the caller stops.

        The run row is locked first, as deleting the dataset locks it first (DatasetService.delete).
        Otherwise the insert's foreign-key checks (run, then item) and the delete's cascade (items,
        then runs) would take the two rows in opposite orders and deadlock."""
        key = (EvalResult.eval_id == run.id, EvalResult.item_id == item.id, EvalResult.agent_version == version)
        row = EvalResult(
            id=uuid.uuid4(), tenant_id=run.tenant_id, eval_id=run.id, item_id=item.id, position=item.position,
            agent_version=version, session_id=uuid.uuid4(), turn_id=uuid.uuid4(), status="pending", scores=[],
            tokens=0, latency_ms=0,
        )  # fmt: skip
        try:
            async with self.transaction() as db:
                if not await _lock_running(db, run.id):
                    return None
                found = (await db.execute(select(EvalResult).where(*key))).scalars().first()
                if found is not None:
                    return ResultRow.of(found)
                db.add(row)
        except INTEGRITY_ERRORS:
            async with self.transaction() as db:
                return ResultRow.of((await db.execute(select(EvalResult).where(*key))).scalars().one())
        return ResultRow.of(row)

    async def turn_exists(self, tenant_id: str, turn_id: uuid.UUID) -> bool:
        async with self.transaction() as db:
            stmt = select(Turn.id).where(Turn.tenant_id == tenant_id, Turn.id == turn_id)
            return (await db.execute(stmt)).first() is not None

    async def ended_turn(self, tenant_id: str, turn_id: uuid.UUID) -> tuple[Turn, list[ToolExecution]] | None:
        """The turn with the tool calls it ran, in order; None while it is still running or queued."""
        async with self.transaction() as db:
            turn = (
                (await db.execute(select(Turn).where(Turn.tenant_id == tenant_id, Turn.id == turn_id)))
                .scalars()
                .first()
            )
            if turn is None or turn.status in ("running", "queued"):
                return None
            stmt = (
                select(ToolExecution)
                .where(ToolExecution.tenant_id == tenant_id, ToolExecution.turn_id == turn_id)
                .order_by(ToolExecution.created_at, ToolExecution.id)
            )
            return turn, list((await db.execute(stmt)).scalars().all())

    async def scored(
        self, result: ResultRow, *, turn_status: str, scores: list[Score], tokens: int, latency_ms: int
    ) -> None:
        values = [s.score for s in scores]
        async with self.transaction() as db:
            await db.execute(
                update(EvalResult)
                .where(EvalResult.id == result.id, EvalResult.status == "pending")
                .values(
                    status="scored",
                    turn_status=turn_status,
                    scores=[s.as_json() for s in scores],
                    score=round(sum(values) / len(values), 4) if values else None,
                    tokens=tokens,
                    latency_ms=latency_ms,
                )  # fmt: skip
            )

    async def judge_usage(
        self, run: EvalRun, result: ResultRow, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        async with self.transaction() as db:
            db.add(
                Usage(
                    id=uuid.uuid4(),
                    tenant_id=run.tenant_id,
                    session_id=result.session_id,
                    turn_id=result.turn_id,
                    agent_id=run.agent_id,
                    model=model[:128],
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    kind="eval_judge",
                )  # fmt: skip
            )

    async def cancelled(self, eval_id: uuid.UUID) -> bool:
        async with self.transaction() as db:
            status = (await db.execute(select(EvalRun.status).where(EvalRun.id == eval_id))).scalar_one_or_none()
            return status in (None, "cancelled")

    async def fail(self, eval_id: uuid.UUID, error: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                update(EvalRun)
                .where(EvalRun.id == eval_id, EvalRun.status == "running")
                .values(status="failed", error=error, ended_at=utcnow(), updated_at=utcnow())
            )

    async def finish(self, eval_id: uuid.UUID) -> None:
        async with self.transaction() as db:
            await db.execute(
                update(EvalRun)
                .where(EvalRun.id == eval_id, EvalRun.status == "running")
                .values(status="completed", ended_at=utcnow(), updated_at=utcnow())
            )

    async def claim(self, runner_id: uuid.UUID, *, stale_before: datetime, limit: int) -> list[uuid.UUID]:
        """Runs nobody runs: queued ones, and running ones whose runner's heartbeat lapsed."""
        alive = select(Runner.id).where(Runner.heartbeat_at >= stale_before)
        async with self.transaction() as db:
            stmt = (
                select(EvalRun.id)
                .where(
                    or_(
                        EvalRun.status == "queued",
                        and_(
                            EvalRun.status == "running",
                            or_(EvalRun.runner_id.is_(None), EvalRun.runner_id.not_in(alive)),
                        ),
                    )
                )
                .order_by(EvalRun.created_at)
                .limit(limit)
            )
            candidates = list((await db.execute(stmt)).scalars().all())
        claimed = []
        for eval_id in candidates:
            async with self.transaction() as db:
                won = await db.execute(
                    update(EvalRun)
                    .where(
                        EvalRun.id == eval_id,
                        or_(
                            EvalRun.status == "queued",
                            and_(
                                EvalRun.status == "running",
                                or_(EvalRun.runner_id.is_(None), EvalRun.runner_id.not_in(alive)),
                            ),
                        ),
                    )
                    .values(status="running", runner_id=runner_id, updated_at=utcnow())
                    .returning(EvalRun.id)
                )
                if won.first() is not None:
                    claimed.append(eval_id)
        return claimed

    async def still_mine(self, eval_id: uuid.UUID, runner_id: uuid.UUID) -> bool:
        async with self.transaction() as db:
            stmt = select(EvalRun.id).where(
                EvalRun.id == eval_id, EvalRun.status == "running", EvalRun.runner_id == runner_id
            )
            return (await db.execute(stmt)).first() is not None


async def _lock_running(db: AsyncSession, eval_id: uuid.UUID) -> bool:
    """FOR KEY SHARE: the run can be neither deleted nor re-keyed until the insert commits, while
    status changes (cancel, finish) go on unblocked."""
    stmt = (
        select(EvalRun.id)
        .where(EvalRun.id == eval_id, EvalRun.status == "running")
        .with_for_update(read=True, key_share=True)
    )
    return (await db.execute(stmt)).first() is not None


class EvalSessions:
    """The hidden sessions of an eval run: one per (item, version), pinned to that version."""

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def create(self, run: EvalRun, result: ResultRow, *, recorded_tools: list[Any] | None) -> None:
        """Made once: a continued run finds the session its result row named."""
        if await self.session.get(Session, result.session_id) is not None:
            return
        version = await AgentVersionRepository(self.session, self.tenant_id).get(run.agent_id, result.agent_version)
        if version is None:
            raise NotFound(f"Agent {run.agent_id} has no version {result.agent_version}")
        self.session.add(
            Session(
                id=result.session_id,
                tenant_id=self.tenant_id,
                agent_id=run.agent_id,
                agent_version=result.agent_version,
                owner_sub=run.owner_sub,
                snapshot=version.config if recorded_tools is None else {**version.config, RECORDED_KEY: recorded_tools},
                meta={"eval_id": str(run.id), "item_id": str(result.item_id)},
                status="open",
                purpose="eval",
            )
        )
        await self.session.flush()


class EvalRunRepository(TenantRepository[EvalRun]):
    model = EvalRun

    async def get(self, owner_sub: str | None, eval_id: uuid.UUID) -> EvalRun | None:
        return await self.first(self.owned(owner_sub).where(EvalRun.id == eval_id))

    async def page(self, owner_sub: str | None, *, limit: int, cursor: str | None) -> list[EvalRun]:
        stmt = self.owned(owner_sub)
        return await self.all(
            paginate(stmt, created_at=EvalRun.created_at, row_id=EvalRun.id, limit=limit, cursor=cursor)
        )

    async def lock_of_dataset(self, dataset_id: uuid.UUID) -> list[EvalRun]:
        """The runs on the dataset, locked FOR UPDATE in id order: deleting the dataset takes them before
        its cascade takes the items, in the order the runner's inserts take them (EvalStore.result_for)."""
        stmt = self.readable().where(EvalRun.dataset_id == dataset_id).order_by(EvalRun.id).with_for_update()
        return await self.all(stmt)

    async def cancel(self, row: EvalRun) -> CancelledRun:
        """Mark the run cancelled (its runner stops at its next look); its turns still pending, for the
        caller to stop as the run's owner."""
        row.status, row.ended_at, row.updated_at = "cancelled", utcnow(), utcnow()
        await self.session.flush()
        return CancelledRun(row.owner_sub, await self.pending_turns(row.id))

    async def results(self, eval_id: uuid.UUID) -> list[EvalResult]:
        stmt = select(EvalResult).where(EvalResult.tenant_id == self.tenant_id, EvalResult.eval_id == eval_id)
        return await self.all(stmt.order_by(EvalResult.position, EvalResult.agent_version))

    async def results_page(self, eval_id: uuid.UUID, *, after: int, limit: int) -> list[EvalResult]:
        """The results of items `after + 1 … after + limit` (positions are 1…N without gaps), every version."""
        stmt = select(EvalResult).where(
            EvalResult.tenant_id == self.tenant_id,
            EvalResult.eval_id == eval_id,
            EvalResult.position > after,
            EvalResult.position <= after + limit,
        )
        return await self.all(stmt.order_by(EvalResult.position, EvalResult.agent_version))

    async def pending_turns(self, eval_id: uuid.UUID) -> list[uuid.UUID]:
        stmt = select(EvalResult.turn_id).where(
            EvalResult.tenant_id == self.tenant_id, EvalResult.eval_id == eval_id, EvalResult.status == "pending"
        )
        return list((await self.session.execute(stmt)).scalars().all())
