"""The live turns of this process: launch, follow, cancel, hand over on shutdown (drain), continue
the turns of replicas that died or drained, and start queued turns as their sessions fall idle.

Only the engine (app/runtime/engine.py) and the app's lifespan use it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.metrics import LIVE_TURNS, TURNS_STARTED
from app.core.sql import Sql
from app.errors import ServiceUnavailable
from app.runtime.lease import QUEUE_SWEEP_EVERY, RunnerLease
from app.runtime.port.events import EndStatus
from app.runtime.port.journal import TurnIdentity, TurnRun
from app.runtime.recorder import TurnRecorder
from app.runtime.runner import HAND_OVER, execute
from app.runtime.runs import continued_run, started_run
from app.runtime.services import RunServices
from app.runtime.store.admission import Admission
from app.runtime.store.claims import Claimed, ClaimStore
from app.runtime.store.notify import EventListener, request_cancel
from app.runtime.store.queue import TurnQueue
from app.runtime.store.runners import LEASE_SECONDS, Orphan
from app.runtime.store.status import end_unowned_turn
from app.runtime.store.turns import TurnStore
from app.runtime.stream import ABANDON, BatchFlusher, TurnStream, TurnWriter

log = logging.getLogger(__name__)
DRAIN_RETRY_SECONDS = 5
"""`Retry-After` of a turn refused while draining: by then the load balancer routes to another replica."""
LISTEN_POLL_SECONDS = 2.0
REMOTE_CANCEL_SECONDS = 5.0


@dataclass(slots=True)
class LiveTurn:
    stream: TurnStream
    task: asyncio.Task[str]


QUEUE_POLL_SECONDS = 1.0
"""How often a queued turn's watcher looks at its session without a NOTIFY (SQLite, a lost one)."""


class TurnManager:
    def __init__(
        self,
        *,
        engine: AsyncEngine,
        sql: Sql,
        services: RunServices,
        listen: bool = False,
    ) -> None:
        self.engine = engine
        self.services = services
        self.autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.listener = EventListener(engine.url) if listen else None
        """PostgreSQL: LISTEN for other replicas' events and cancel requests (SQLite serves one process)."""
        self.store = TurnStore(sql)
        self.queue = TurnQueue(sql)
        self.claims = ClaimStore(sql)
        self._waiters: set[asyncio.Task[None]] = set()
        self.flusher = BatchFlusher(sql)
        self._live: dict[uuid.UUID, LiveTurn] = {}
        self.draining = False
        """Set by SIGTERM: readiness fails and new turns are refused while running turns finish."""
        self.lease = RunnerLease(engine, self.recover)
        self._sweeps = 0
        if self.listener is not None:
            self.listener.on_cancel = self._cancel_on_request

    def _cancel_on_request(self, turn_id: uuid.UUID) -> None:
        entry = self._live.get(turn_id)
        if entry is not None:
            entry.task.cancel()

    async def cancel_elsewhere(
        self, tenant_id: str, turn_id: uuid.UUID, *, timeout: float = REMOTE_CANCEL_SECONDS
    ) -> bool:
        """Ask the replica running the turn to cancel it; True once the turn has left `running`."""
        if self.listener is None:
            return False
        await request_cancel(self.autocommit, turn_id)
        async with asyncio.timeout(timeout):
            while await self.store.current_status(tenant_id, turn_id) == "running":
                await self.listener.wait(turn_id, 0.2)
            return True
        return False

    @property
    def runner_id(self) -> uuid.UUID:
        return self.lease.runner_id

    async def start(self) -> None:
        """Listen, register this process and continue the turns of processes that died."""
        if self.listener is not None:
            await self.listener.start()
        await self.lease.start()

    def live(self, turn_id: uuid.UUID) -> TurnStream | None:
        entry = self._live.get(turn_id)
        return entry.stream if entry else None

    def admit(self) -> None:
        """Refuse a new turn (or a resume) before anything is stored for it, while this replica drains."""
        if self.draining:
            raise ServiceUnavailable(
                "this replica is shutting down; retry (another replica takes the turn)",
                headers={"Retry-After": str(DRAIN_RETRY_SECONDS)},
                reason="draining",
            )

    async def drain(self, grace_seconds: float) -> int:
        """Stop taking turns, give the running ones `grace_seconds` to end, then hand the rest over to
        another replica (or this one after its restart); how many were handed over."""
        self.draining = True
        tasks = [entry.task for entry in self._live.values()]
        if not tasks:
            return 0
        log.info("draining: waiting up to %ss for %d running turn(s)", grace_seconds, len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
        await self.hand_over()
        return len(pending)

    async def hand_over(self) -> None:
        """Stop every run of this process without settling it: its rows are stored and its turn is
        released (`handed_over`) for a live replica to continue at once; its followers are told to reconnect."""
        entries = list(self._live.values())
        for entry in entries:
            entry.task.cancel(msg=HAND_OVER)
        for entry in entries:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await entry.task

    def launch(self, run: TurnRun) -> TurnStream:
        stream = TurnStream(
            turn_id=run.ident.turn_id,
            tenant_id=run.ident.tenant_id,
            last_seq=run.last_seq,
            writer=TurnWriter(self.store.sql, self.flusher, runner_id=self.runner_id),
            ceiling=run.seq_ceiling,
        )
        turn_id = run.ident.turn_id
        journal = TurnRecorder(run.ident, run.owner_sub, stream, self.store)
        task = asyncio.create_task(
            execute(self.services.runtime_of(run), run, self.services.services_of(run), journal, stream, self.store),
            name=f"turn-{turn_id}",
        )
        task.add_done_callback(lambda _: self._forget(turn_id))
        stream.on_taken_over = lambda: _stop_taken(task)
        self._live[turn_id] = LiveTurn(stream, task)
        TURNS_STARTED.inc()
        LIVE_TURNS.set(len(self._live))
        return stream

    def _forget(self, turn_id: uuid.UUID) -> None:
        self._live.pop(turn_id, None)
        LIVE_TURNS.set(len(self._live))

    async def wait_for_events(self, turn_id: uuid.UUID, poll_seconds: float) -> None:
        """Until new events of a turn run elsewhere may be stored: a NOTIFY, or the poll interval."""
        if self.listener is None:
            await asyncio.sleep(poll_seconds)
        else:
            await self.listener.wait(turn_id, max(poll_seconds, LISTEN_POLL_SECONDS))

    async def wait(self, turn_id: uuid.UUID) -> None:
        entry = self._live.get(turn_id)
        if entry is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(entry.task)

    async def cancel(self, turn_id: uuid.UUID) -> bool:
        """Stop a turn running in this process; False if it does not run here."""
        entry = self._live.get(turn_id)
        if entry is None:
            return False
        entry.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await entry.task
        return True

    async def abandon(self, turn_ids: list[uuid.UUID] | None = None) -> None:
        """Stop these runs (all: None) where they are, writing nothing more: their turns are another
        replica's now (the fence), or this process is about to vanish as if killed."""
        entries = [entry for turn_id, entry in self._live.items() if turn_ids is None or turn_id in turn_ids]
        for entry in entries:
            entry.task.cancel(msg=ABANDON)
        for entry in entries:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await entry.task

    async def shutdown(self) -> None:
        """Stop: the turns still running are handed over (a drain already handed over its leftovers)."""
        self.draining = True
        for waiter in list(self._waiters):
            waiter.cancel()
        await self.hand_over()
        await self.flusher.close()
        await self.lease.stop()
        if self.listener is not None:
            await self.listener.close()

    async def end_orphan(
        self, tenant_id: str, turn_id: uuid.UUID, *, status: EndStatus, error: dict[str, str] | None
    ) -> bool:
        """End a running or interrupted turn that no task of this process runs (a crash, a cancel)."""
        return await end_unowned_turn(self.engine, tenant_id, turn_id, status=status, error=error)

    async def recover(self) -> int:
        """Continue here the turns left `running` by replicas that died or drained (app/runtime/lease.py);
        how many this sweep continued. A draining replica takes none.

        A database that is down must not stop the service (readiness reports it), so a failed
        sweep is logged and skipped; the next sweep tries again. SQLite runs one process: at start-up
        every running turn of another runner is orphaned.
        """
        await self._give_up_taken()
        if self.draining:
            return 0
        first, self._sweeps = self._sweeps == 0, self._sweeps + 1
        lease = 0.0 if first and not self.lease.postgresql else LEASE_SECONDS
        try:
            orphans = await self.lease.orphans(lease_seconds=lease)
        except (OSError, SQLAlchemyError) as exc:
            log.warning("recovery sweep skipped: database unavailable (%s)", type(exc).__name__)
            return 0
        continued = 0
        for orphan in orphans:
            if orphan.turn_id not in self._live and not self.draining and await self.continue_orphan(orphan):
                continued += 1
        if continued:
            log.warning("continuing %d turn(s) of a replica that stopped", continued)
        if first or self._sweeps % QUEUE_SWEEP_EVERY == 0:
            await self._start_stalled_queues()
        return continued

    async def _give_up_taken(self) -> None:
        """Runs of this process whose turns another replica claimed (it thought this one dead) stop."""
        try:
            taken = await self.lease.taken_over(list(self._live))
        except (OSError, SQLAlchemyError):
            return
        if taken:
            log.warning("%d turn(s) of this process continue on another replica; stopping them here", len(taken))
            await self.abandon(taken)

    async def continue_orphan(self, orphan: Orphan) -> bool:
        """Claim an orphaned turn and continue it here; False if another replica claimed it first.

        A turn this replica cannot run (its session is gone, its runtime or provider is not
        available here) ends `failed` / `server_restarted` instead.
        """
        try:
            claimed = await self.claims.claim(orphan, self.runner_id)
        except (OSError, SQLAlchemyError) as exc:
            log.warning("turn %s not claimed this sweep (%s)", orphan.turn_id, type(exc).__name__)
            return False
        if claimed is None:
            return False
        try:
            run = await self._continued_run(claimed)
        except Exception:
            log.exception("turn %s could not be rebuilt to continue", orphan.turn_id)
            run = None
        if run is None:
            error = {"code": "server_restarted", "message": "the service restarted and cannot continue this turn"}
            await self.end_orphan(orphan.tenant_id, orphan.turn_id, status="failed", error=error)
            return False
        self.launch(run)
        return True

    async def _continued_run(self, claimed: Claimed) -> TurnRun | None:
        session = await self.store.session_for_turn(claimed.orphan.tenant_id, claimed.session_id, None)
        if session is None:
            return None
        run = await continued_run(self.store, self.claims, claimed, session)
        return run if self.services.can_run(run) else None

    async def start_next(self, tenant_id: str, session_id: uuid.UUID) -> uuid.UUID | None:
        """Start the session's oldest queued turn here if the session is idle; its id, or None."""
        session = await self.store.session_for_turn(tenant_id, session_id, None)
        if session is None:
            return None
        if session["status"] != "open":
            await self.queue.cancel_queued(tenant_id, session_id)
            return None
        ident = TurnIdentity(tenant_id, session_id, uuid.uuid4(), session["agent_id"])
        ceiling = Admission.of(session).ceilings.max_concurrent_turns
        row = await self.queue.promote(ident, self.runner_id, max_concurrent=ceiling)
        if row is None:
            return None
        started_ident = TurnIdentity(tenant_id, session_id, row["id"], session["agent_id"])
        self.launch(started_run(started_ident, session, row, await self.store.history(tenant_id, session_id)))
        started: uuid.UUID = row["id"]
        return started

    def start_when_idle(self, tenant_id: str, session_id: uuid.UUID, turn_id: uuid.UUID) -> None:
        """Watch a queued turn's session from this process and start queued turns in order as the
        session falls idle, until this one has started (or was cancelled). No cost to other turns:
        only enqueuers watch; a replica that dies leaves its queue to the lease's sweep."""
        waiter = asyncio.create_task(self._start_when_idle(tenant_id, session_id, turn_id), name=f"queued-{turn_id}")
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)

    async def _start_when_idle(self, tenant_id: str, session_id: uuid.UUID, turn_id: uuid.UUID) -> None:
        try:
            while await self.store.current_status(tenant_id, turn_id) == "queued":
                active = await self.queue.active_turn(tenant_id, session_id)
                if active is None:
                    if await self.start_next(tenant_id, session_id) is None:
                        await asyncio.sleep(QUEUE_POLL_SECONDS)  # no free concurrency slot yet
                else:
                    await self.wait_for_events(active, QUEUE_POLL_SECONDS)
        except (OSError, SQLAlchemyError) as exc:
            log.warning("queued turn %s left to the sweep (%s)", turn_id, type(exc).__name__, exc_info=True)

    async def _start_stalled_queues(self) -> None:
        try:
            for tenant_id, session_id in await self.queue.stalled():
                await self.start_next(tenant_id, session_id)
        except (OSError, SQLAlchemyError) as exc:
            log.warning("queued turns not started this sweep (%s)", type(exc).__name__)


def _stop_taken(task: asyncio.Task[str]) -> None:
    """A write found the run's turn claimed by another replica: the run stops where it is (a write
    made by the run's own task raises that stop itself)."""
    if asyncio.current_task() is not task:
        task.cancel(msg=ABANDON)
