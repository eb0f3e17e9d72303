"""The eval runner's door to the engine: one session of purpose `eval` per (item, version), its turn
started under the id its result row chose, read back once ended, cancelled when the run is."""

from __future__ import annotations

import contextlib
import uuid

from app.auth.principal import Principal
from app.container import AppState
from app.errors import AppError, Conflict, NotFound
from app.evals.repository import EvalSessions, EvalStore, ResultRow
from app.evals.runner import EndedTurn
from app.models import DatasetItem, EvalRun
from app.turns.schemas import TurnCreate
from app.turns.service import TurnService


class EngineTurns:
    def __init__(self, state: AppState, store: EvalStore) -> None:
        self.state = state
        self.store = store

    async def start(self, run: EvalRun, item: DatasetItem, result: ResultRow) -> str | None:
        owner = Principal(sub=run.owner_sub, tenant_id=run.tenant_id)
        recorded = item.recorded_tools if run.tools == "recorded" else None
        try:
            async with self.store.transaction() as db:
                await EvalSessions(db, run.tenant_id).create(run, result, recorded_tools=recorded)
            body = TurnCreate(input=item.input, multitask_strategy="enqueue")
            await TurnService(self.state, owner).start(result.session_id, body, turn_id=result.turn_id)
        except AppError as exc:
            return exc.detail
        return None

    async def ended(self, tenant_id: str, turn_id: uuid.UUID) -> EndedTurn | None:
        found = await self.store.ended_turn(tenant_id, turn_id)
        if found is None:
            return None
        turn, calls = found
        return EndedTurn(
            status=turn.status, text=turn.final_output or "", output=getattr(turn, "output", None),
            input_tokens=turn.input_tokens, output_tokens=turn.output_tokens, created_at=turn.created_at,
            ended_at=turn.ended_at, tool_calls=[{"name": c.tool_name, "arguments": c.arguments} for c in calls],
        )  # fmt: skip

    async def stop(self, tenant_id: str, owner_sub: str, turn_id: uuid.UUID) -> None:
        with contextlib.suppress(Conflict, NotFound):
            await TurnService(self.state, Principal(sub=owner_sub, tenant_id=tenant_id)).cancel(turn_id)
