"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from app.core.metrics import observe_pools
from app.core.migrate import head_revisions, readiness_problem
from app.core.problems import problem_responses
from app.deps import ContainerDep, EngineDep, SqlDep
from app.errors import ServiceUnavailable

READY_TIMEOUT_SECONDS = 3.0
router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str


@router.get("/healthz", operation_id="healthz", response_model=Health)
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", operation_id="readyz", response_model=Health, responses=problem_responses(503))
async def readyz(engine: EngineDep, state: ContainerDep) -> Health:
    """Ready when the replica is not draining, the database answers and its schema is at the migrations'
    head: an unmigrated database would answer every API call with a 500, so no traffic should reach it."""
    if state.turns.draining:
        raise ServiceUnavailable("Not ready: this replica is shutting down", reason="draining")
    heads = await asyncio.to_thread(head_revisions)
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS):
            problem = await readiness_problem(engine, heads)
    except (SQLAlchemyError, OSError) as exc:  # OSError covers refused connections and TimeoutError
        raise ServiceUnavailable("Database is unreachable") from exc
    if problem is not None:
        raise ServiceUnavailable(f"Not ready: {problem}", reason="schema_not_at_head")
    return Health(status="ready")


@router.get("/metrics", operation_id="metrics", response_class=PlainTextResponse)
async def metrics(engine: EngineDep, sql: SqlDep) -> PlainTextResponse:
    observe_pools(engine, sql)
    return PlainTextResponse(generate_latest().decode(), media_type=CONTENT_TYPE_LATEST)
