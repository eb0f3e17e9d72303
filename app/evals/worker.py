"""Picks up eval runs nobody runs — new ones, and those of a replica that died — and runs them here.

A run is claimed by a conditional UPDATE naming this process's runner (its heartbeat in `runners`
is the lease, as for turns), so two replicas never run the same eval; a replica whose heartbeat
lapsed loses its runs to the next pass of any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import timedelta

from sqlalchemy.exc import SQLAlchemyError

from app.container import AppState
from app.evals.repository import CancelledRun, EvalStore
from app.evals.runner import EvalRunner
from app.evals.turns import EngineTurns
from app.models.base import utcnow

log = logging.getLogger(__name__)
LEASE_SECONDS = 10.0
CLAIM_BATCH = 4


class EvalWorker:
    def __init__(self, state: AppState, *, poll_seconds: float) -> None:
        self.state = state
        self.poll_seconds = poll_seconds
        self.store = EvalStore(state.session_factory, max_connections=state.settings.evals.max_connections)
        self.turns = EngineTurns(state, self.store)
        self.runner = EvalRunner(self.store, self.turns, state.turn_engine.providers)
        self._loop_task: asyncio.Task[None] | None = None
        self._runs: dict[uuid.UUID, asyncio.Task[None]] = {}

    def start(self) -> None:
        self._loop_task = asyncio.create_task(self._loop(), name="evals")

    async def stop(self) -> None:
        tasks = [t for t in (self._loop_task, *self._runs.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wake(self) -> None:
        """A run was just created here: claim it now rather than at the next poll."""
        with contextlib.suppress(OSError, SQLAlchemyError):
            await self.run_once()

    async def stop_turns(self, tenant_id: str, run: CancelledRun) -> None:
        """A cancelled run's turns that are still running, stopped as its owner (its runner, here or
        elsewhere, stops too)."""
        for turn_id in run.turn_ids:
            await self.turns.stop(tenant_id, run.owner_sub, turn_id)

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except (OSError, SQLAlchemyError) as exc:
                log.warning("eval pass skipped (%s)", type(exc).__name__)
            await asyncio.sleep(self.poll_seconds)

    async def run_once(self) -> list[uuid.UUID]:
        me = self.state.turn_engine.runner_id
        stale = utcnow() - timedelta(seconds=LEASE_SECONDS)
        claimed = await self.store.claim(me, stale_before=stale, limit=CLAIM_BATCH)
        for eval_id in claimed:
            if eval_id not in self._runs:
                task = asyncio.create_task(self._run(eval_id), name=f"eval {eval_id}")
                self._runs[eval_id] = task
        return claimed

    async def _run(self, eval_id: uuid.UUID) -> None:
        me = self.state.turn_engine.runner_id
        try:
            while True:  # a run this process lost and claimed again while its task wound down goes on here
                await self.runner.run(eval_id, lambda: self.store.still_mine(eval_id, me))
                if not await self.store.still_mine(eval_id, me):
                    break
        except (OSError, SQLAlchemyError) as exc:
            log.warning("eval %s paused (%s); a later pass continues it", eval_id, type(exc).__name__)
        except Exception:
            log.exception("eval %s failed", eval_id)
            with contextlib.suppress(OSError, SQLAlchemyError):
                await self.store.fail(eval_id, "internal_error: the eval runner failed; the log has the cause")
        finally:
            self._runs.pop(eval_id, None)
