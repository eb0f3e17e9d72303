"""Eval runs: start one (the worker runs it, app/evals/worker.py), read its figures and items, cancel it."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.repository import AgentRepository, AgentVersionRepository
from app.auth.principal import Principal
from app.core.pagination import page_of
from app.errors import Conflict, InvalidInput, NotFound, RuleViolation
from app.evals import schemas, summary
from app.evals.datasets import position_cursor
from app.evals.repository import ENDED, CancelledRun, DatasetRepository, EvalRunRepository
from app.models import EvalResult, EvalRun


class EvalService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.runs = EvalRunRepository(db, principal.tenant_id)

    async def create(self, body: schemas.EvalCreate) -> schemas.EvalRun:
        tenant = self.principal.tenant_id
        dataset = await DatasetRepository(self.db, tenant).get(body.dataset_id)
        if dataset is None:
            raise NotFound(f"Dataset {body.dataset_id} not found")
        if dataset.item_count == 0:
            raise InvalidInput("The dataset has no items", field="body.dataset_id")
        agent = await AgentRepository(self.db, tenant).get(body.agent_id)
        if agent is None:
            raise NotFound(f"Agent {body.agent_id} not found")
        versions = AgentVersionRepository(self.db, tenant)
        for field, version in (("agent_version", body.agent_version), ("baseline_version", body.baseline_version)):
            if version is None:
                continue
            pinned = await versions.get(body.agent_id, version)
            if pinned is None:
                raise InvalidInput(f"Agent {body.agent_id} has no version {version}", field=f"body.{field}")
            if body.tools == "recorded" and pinned.config.get("runtime") == "claude_sdk":
                raise RuleViolation(
                    "recorded_tools_unsupported",
                    f"Version {version} runs on claude_sdk, whose tools Claude Code runs itself: use tools: live",
                )
        if body.baseline_version == body.agent_version:
            raise InvalidInput("The baseline is another version than the one evaluated", field="body.baseline_version")
        per_item = 1 if body.baseline_version is None else 2
        row = EvalRun(
            id=uuid.uuid4(), tenant_id=tenant, owner_sub=self.principal.sub, dataset_id=dataset.id,
            agent_id=agent.id, agent_version=body.agent_version, baseline_version=body.baseline_version,
            tools=body.tools, concurrency=body.concurrency, status="queued", total=dataset.item_count * per_item,
        )  # fmt: skip
        await self.runs.add(row)
        return view(row, [])

    async def listing(self, *, limit: int, cursor: str | None) -> schemas.EvalRunPage:
        rows, next_cursor = page_of(
            await self.runs.page(self.principal.owner_filter, limit=limit, cursor=cursor), limit
        )
        return schemas.EvalRunPage(
            items=[view(r, await self.runs.results(r.id)) for r in rows], next_cursor=next_cursor
        )

    async def get(self, eval_id: uuid.UUID) -> schemas.EvalRun:
        row = await self._load(eval_id)
        return view(row, await self.runs.results(eval_id))

    async def items(self, eval_id: uuid.UUID, *, limit: int, cursor: str | None) -> schemas.EvalItemPage:
        run = await self._load(eval_id)
        after = position_cursor(cursor)
        rows = await self.runs.results_page(eval_id, after=after, limit=limit)
        per_item = 1 if run.baseline_version is None else 2
        more = after + limit < run.total // per_item
        return schemas.EvalItemPage(
            items=[item_view(r) for r in rows], next_cursor=str(after + limit) if more else None
        )

    async def cancel(self, eval_id: uuid.UUID) -> tuple[schemas.EvalRun, CancelledRun]:
        """Mark the run cancelled; its turns still pending, for the caller to stop."""
        row = await self._load(eval_id)
        if row.status in ENDED:
            raise Conflict(f"Eval {eval_id} is already {row.status}")
        cancelled = await self.runs.cancel(row)
        return view(row, await self.runs.results(eval_id)), cancelled

    async def _load(self, eval_id: uuid.UUID) -> EvalRun:
        row = await self.runs.get(self.principal.owner_filter, eval_id)
        if row is None:
            raise NotFound(f"Eval {eval_id} not found")
        return row


def scored(rows: list[EvalResult]) -> list[summary.Scored]:
    return [
        summary.Scored(
            str(r.item_id), r.position, r.agent_version, r.score, r.scores, r.tokens, r.latency_ms, r.turn_status
        )  # fmt: skip
        for r in rows
        if r.status == "scored"
    ]


def view(row: EvalRun, results: list[EvalResult]) -> schemas.EvalRun:
    done = scored(results)
    figures: dict[str, object] = {}
    candidate = [r for r in done if r.version == row.agent_version]
    figures["candidate"] = {"version": row.agent_version, **summary.version_figures(candidate)}
    if row.baseline_version is not None:
        baseline = [r for r in done if r.version == row.baseline_version]
        figures["baseline"] = {"version": row.baseline_version, **summary.version_figures(baseline)}
        figures["comparison"] = summary.compare(candidate, baseline)
    return schemas.EvalRun(
        id=row.id, status=row.status, dataset_id=row.dataset_id, agent_id=row.agent_id,  # type: ignore[arg-type]
        agent_version=row.agent_version, baseline_version=row.baseline_version, tools=row.tools,
        concurrency=row.concurrency, progress=schemas.Progress(total=row.total, done=len(done)), summary=figures,
        error=row.error, created_at=row.created_at, ended_at=row.ended_at,
    )  # fmt: skip


def item_view(row: EvalResult) -> schemas.EvalItem:
    return schemas.EvalItem(
        item_id=row.item_id, position=row.position, agent_version=row.agent_version, session_id=row.session_id,
        turn_id=row.turn_id, status=row.status, turn_status=row.turn_status, score=row.score, scores=row.scores,
        tokens=row.tokens, latency_ms=row.latency_ms,
    )  # fmt: skip
