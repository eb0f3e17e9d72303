"""`TurnEngine`: the one front door of the turn engine. Start a turn (any strategy, mode or runtime),
resume it with its decisions, follow it (typed events, stored then live), cancel it, close a session.

Routers and services call this and nothing else of the engine; what they get back are the port's
types (`LoggedEvent`, `Reconnect`), never a wire format: SSE, AG-UI and the AI SDK stream are
encoded at the HTTP edge. Behind it, `TurnManager` keeps the live runs of this process, the store
(app/runtime/store/) every statement, and app/runtime/runs.py builds every run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.auth.principal import Principal
from app.core.db import unit_of_work
from app.core.sql import INTEGRITY_ERRORS
from app.errors import Conflict, NotFound, RuleViolation, TooManyRequests, session_not_open
from app.governance.limits import effective_limits
from app.models import ACTIVE_STATUSES
from app.models.base import utcnow
from app.providers.attachments import ATTACHMENT_UNSUPPORTED
from app.providers.base import Attachment, ChatMessage
from app.providers.registry import ProviderRegistry
from app.runtime.manager import TurnManager
from app.runtime.port.events import Followed, LoggedEvent, Reconnect
from app.runtime.port.journal import Supersedes, TurnIdentity
from app.runtime.runs import resumed_run, started_run
from app.runtime.store.admission import Admission, NoFreeSlot, too_many_turns
from app.runtime.store.claims import ClaimStore
from app.runtime.store.queue import QueueFull
from app.runtime.store.status import SEQ_BLOCK
from app.runtime.store.turns import message_row
from app.runtime.stream import RECONNECT_MS
from app.structured.schema import CLAUDE_SDK_NO_SCHEMA, OUTPUT_SCHEMA_UNSUPPORTED

Strategy = Literal["reject", "enqueue", "interrupt", "rollback"]
WAITING_STATUSES = ("running", "queued")
"""A follower of a turn in these states waits for events it has not seen yet."""
QUEUE_RETRY_SECONDS = 5
POLL_SECONDS = 0.5
SETTLE_POLLS = 20
REPLAY_PAGE = 1000
SESSION_RUNTIME_RETRY_SECONDS = 5
DEFAULT_MAX_STEPS = 12


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a caller asks of a new turn (the REST body, a schedule's firing, an adapter's message)."""

    input: str
    mode: str = "interactive"
    multitask_strategy: Strategy = "reject"
    limits: Mapping[str, Any] = field(default_factory=dict)
    """Asked limits (`max_loops`, `max_output_tokens`, `max_total_tokens`); the ceilings cap them."""
    max_steps: int | None = None
    channel: str = "api"
    """The door the turn came through: `api`, `mcp` or `a2a`."""
    output_schema: Mapping[str, Any] | None = None
    """The request's schema for a structured answer (else the agent's, if it has one)."""
    files: tuple[tuple[str, uuid.UUID], ...] = ()
    """The input's file parts, `(part type, file id)`, resolved by the engine's `Attachments`."""
    supersedes: Supersedes | None = None
    """The turn this one regenerates; its messages leave the history in the statement that stores this one."""


@dataclass(frozen=True, slots=True)
class Started:
    """A turn that runs (or waits in its session's queue): follow it from its first event of this run."""

    turn_id: uuid.UUID
    first_seq: int
    _follow: Callable[[int], AsyncIterator[Followed]]

    def follow(self, after: int | None = None) -> AsyncIterator[Followed]:
        return self._follow(self.first_seq - 1 if after is None else after)


class SessionRuntime(Protocol):
    """A runtime that keeps a process per session (the Claude SDK's): bounded, closed with its session."""

    def admits(self, session_id: uuid.UUID) -> bool: ...

    async def close_session(self, session_id: uuid.UUID) -> None: ...


class SessionExpiry(Protocol):
    """The idle TTL's promise (app/sessions/expiry.py): a session idle past it is expired from that
    instant on, swept or not. The engine asks it only when the session's last turn is old enough."""

    def may_have_expired(self, last_active_at: datetime, now: datetime) -> bool: ...

    async def status(self, caller: Principal, session_id: uuid.UUID) -> str: ...


class Attachments(Protocol):
    """The files a turn's input names, as attachments (app/files/attachments.py): each checked for the
    caller, the runtime and the model's provider, and tied to the session (retention deletes them with it)."""

    async def resolve(
        self, caller: Principal, parts: Sequence[tuple[str, uuid.UUID]], snapshot: Mapping[str, Any],
        session_id: uuid.UUID,
    ) -> tuple[Attachment, ...]: ...  # fmt: skip


Decide = Callable[[AsyncSession], Awaitable[uuid.UUID | None]]
"""Records decisions on an interrupted turn inside the resume's transaction (the turn row locked by
it); returns the approval whose decision resumes the turn, or None while others still wait."""


class TurnEngine:
    def __init__(
        self,
        manager: TurnManager,
        session_factory: async_sessionmaker[AsyncSession],
        *,
        autonomy_enabled: bool = True,
        session_runtimes: Mapping[str, SessionRuntime] | None = None,
        expiry: SessionExpiry | None = None,
        attachments: Attachments | None = None,
    ) -> None:
        self.manager = manager
        self._session_factory = session_factory
        self._autonomy_enabled = autonomy_enabled
        self._session_runtimes = dict(session_runtimes or {})
        self._expiry = expiry
        self._attachments = attachments
        self._store = manager.store
        self._queue = manager.queue
        self._claims = ClaimStore(manager.store.sql)

    @property
    def runner_id(self) -> uuid.UUID:
        """This process's id in the runner leases (a runner's heartbeat is the lease on what it runs)."""
        return self.manager.runner_id

    @property
    def providers(self) -> ProviderRegistry:
        return self.manager.services.providers

    @property
    def draining(self) -> bool:
        return self.manager.draining

    def admit(self) -> None:
        """503 `draining` before anything is stored, while this replica drains."""
        self.manager.admit()

    async def start(
        self, caller: Principal, session_id: uuid.UUID, request: TurnRequest, *, turn_id: uuid.UUID | None = None
    ) -> Started:
        """Start a turn, or handle the session's active turn as `request.multitask_strategy` says.

        `turn_id` names the new turn (a schedule's firing chooses it in advance, so a retried start
        finds the turn instead of starting a second one)."""
        self.admit()
        strategy = request.multitask_strategy
        try:
            return await self._start(caller, session_id, request, turn_id)
        except NoFreeSlot as exc:
            # every slot is taken: a turn asked to wait behind its session's active turn waits for a slot too
            if strategy != "enqueue" or await self._queue.active(caller.tenant_id, session_id) is None:
                raise too_many_turns(exc.ceiling or 0) from None
            return await self._enqueue(caller, session_id, request, turn_id)
        except INTEGRITY_ERRORS as exc:
            active = await self._queue.active(caller.tenant_id, session_id)
            if active is None or strategy == "reject":
                raise _busy(active) from exc
            if strategy == "enqueue":
                return await self._enqueue(caller, session_id, request, turn_id)
            await self._displace(caller.tenant_id, session_id, active["id"], rollback=strategy == "rollback")
            try:
                return await self._start(caller, session_id, request, turn_id)
            except INTEGRITY_ERRORS as again:
                raise Conflict("Another turn started in this session meanwhile; try again") from again

    async def _start(
        self, caller: Principal, session_id: uuid.UUID, request: TurnRequest, turn_id: uuid.UUID | None
    ) -> Started:
        """Store the turn with its user message and read the history (the set-up the stream waits for), then launch it.

        This is the hot path of every turn: single statements (app/core/sql.py), no ORM unit of work.
        The partial unique index on active turns guarantees one active turn per session; a second
        start fails on it (one of `INTEGRITY_ERRORS`).
        """
        session, turn, ident, attachments = await self._admitted(caller, session_id, request, turn_id)
        user_message = message_row(ident, ChatMessage(role="user", content=request.input, attachments=attachments))
        ceiling = Admission.of(session).ceilings.max_concurrent_turns
        history = await self._store.start_turn(turn, user_message, max_concurrent=ceiling)
        stream = self.manager.launch(started_run(ident, session, turn, history, request.supersedes))
        return Started(ident.turn_id, stream.first_seq, stream.follow)

    async def _enqueue(
        self, caller: Principal, session_id: uuid.UUID, request: TurnRequest, turn_id: uuid.UUID | None
    ) -> Started:
        _, turn, ident, attachments = await self._admitted(caller, session_id, request, turn_id)
        turn["attachments"] = [dataclasses.asdict(a) for a in attachments] or None
        try:
            await self._queue.enqueue(turn)
        except QueueFull as exc:
            raise TooManyRequests("queue_full", str(exc), retry_after=QUEUE_RETRY_SECONDS) from exc
        self.manager.start_when_idle(ident.tenant_id, ident.session_id, ident.turn_id)
        return Started(ident.turn_id, 1, lambda after: self.follow(ident.tenant_id, ident.turn_id, after))

    async def _admitted(
        self, caller: Principal, session_id: uuid.UUID, request: TurnRequest, turn_id: uuid.UUID | None
    ) -> tuple[Mapping[str, Any], dict[str, Any], TurnIdentity, tuple[Attachment, ...]]:
        """The session, the new turn's row, its identity and its input's files, once every admission rule let it in.

        Only the caller's own sessions take turns (`writer`): an admin reads every session of its
        tenant, but a turn in another user's would act as that user."""
        session = await self._store.session_for_turn(caller.tenant_id, session_id, caller.writer.sub)
        if session is None:
            raise NotFound(f"Session {session_id} not found")
        now = utcnow()
        status = session["status"]
        if status == "open" and self._expiry and self._expiry.may_have_expired(session["last_active_at"], now):
            status = await self._expiry.status(caller, session_id)
        if status != "open":
            raise session_not_open(session_id, status)
        snapshot = session["snapshot"]
        self._admit_runtime(session["id"], snapshot)
        output_schema = _output_schema(request, snapshot)
        attachments = await self._resolve_files(caller, request, session)
        admission = Admission.of(session)
        admission.check_quota(now)
        max_steps = self._admit_mode(request, snapshot)
        limits = effective_limits(admission.ceilings, snapshot.get("limits", {}), request.limits)
        ident = TurnIdentity(session["tenant_id"], session["id"], turn_id or uuid.uuid4(), session["agent_id"])
        turn = {
            "id": ident.turn_id, "tenant_id": ident.tenant_id, "session_id": session["id"], "status": "running",
            "input": request.input, "max_loops": limits.max_loops, "max_output_tokens": limits.max_output_tokens,
            "max_total_tokens": limits.max_total_tokens, "owner_sub": session["owner_sub"],
            "runner_id": self.manager.runner_id, "input_tokens": 0, "output_tokens": 0, "loop_count": 0,
            "last_seq": 0, "seq_ceiling": SEQ_BLOCK, "created_at": now, "updated_at": now, "mode": request.mode,
            "max_steps": max_steps, "channel": request.channel, "output_schema": output_schema,
        }  # fmt: skip
        if request.supersedes is not None:
            turn["supersedes_turn_id"] = request.supersedes.turn_id
        return session, turn, ident, attachments

    async def _resolve_files(
        self, caller: Principal, request: TurnRequest, session: Mapping[str, Any]
    ) -> tuple[Attachment, ...]:
        if not request.files:
            return ()
        if self._attachments is None:
            raise RuleViolation(ATTACHMENT_UNSUPPORTED, "this service takes no file parts")
        return await self._attachments.resolve(caller, request.files, session["snapshot"], session["id"])

    def _admit_mode(self, request: TurnRequest, snapshot: Mapping[str, Any]) -> int | None:
        """An autonomous turn's step bound; 422 `autonomy_disabled` where the service or the agent forbids it."""
        if request.mode != "autonomous":
            return None
        autonomy = snapshot.get("autonomy") or {}
        if not self._autonomy_enabled:
            raise RuleViolation("autonomy_disabled", "autonomous turns are disabled in this service (AUTONOMY_ENABLED)")
        if not autonomy.get("enabled", False):
            raise RuleViolation("autonomy_disabled", "this agent does not allow autonomous turns (autonomy.enabled)")
        bounds = (int(autonomy.get("max_steps", DEFAULT_MAX_STEPS)), request.max_steps)
        return min(x for x in bounds if x is not None)

    def _admit_runtime(self, session_id: uuid.UUID, snapshot: Mapping[str, Any]) -> None:
        """A runtime with a process per session (`claude_sdk`): 429 while all of this replica's are busy."""
        name = snapshot.get("runtime")
        runtime = self._session_runtimes.get(name) if isinstance(name, str) else None
        if runtime is not None and not runtime.admits(session_id):
            raise TooManyRequests(
                "too_many_turns",
                f"this replica already runs its maximum of {name} sessions",
                retry_after=SESSION_RUNTIME_RETRY_SECONDS,
            )

    async def _displace(self, tenant_id: str, session_id: uuid.UUID, active: uuid.UUID, *, rollback: bool) -> None:
        """Cancel the session's queued turns and its active turn; with `rollback`, also remove the
        active turn's messages from the history (its events, receipts and usage stay: the audit trail)."""
        await self._queue.cancel_queued(tenant_id, session_id)
        with contextlib.suppress(Conflict):
            await self.cancel(tenant_id, active)
        if rollback:
            await self._store.delete_messages(tenant_id, active)

    async def resume(self, caller: Principal, turn_id: uuid.UUID, decide: Decide) -> Started | None:
        """Record decisions on an interrupted turn (`decide`, in one transaction with the claim) and,
        once none waits, resume the turn at the call that waited; None while others still wait.

        409 if another decision resumed it first. A client may decide as soon as it sees
        `approval.required`, while the run is still settling: the resume waits for the settle.
        """
        self.admit()
        await self.manager.wait(turn_id)
        async with unit_of_work(self._session_factory) as db:
            approval_id = await decide(db)
            if approval_id is None:
                return None
            row = await self._claims.resume_in(db, caller.tenant_id, turn_id, approval_id, self.manager.runner_id)
            if row is None:
                raise Conflict(f"Turn {turn_id} was resumed by another decision")
        session = await self._store.session_for_turn(caller.tenant_id, row["session_id"], None)
        if session is None:
            raise NotFound(f"Session {row['session_id']} not found")
        ident = TurnIdentity(caller.tenant_id, row["session_id"], turn_id, session["agent_id"])
        decisions = await self._claims.decisions(ident, loop=row["loop_count"])
        stream = self.manager.launch(await resumed_run(self._store, session, row, decisions))
        return Started(turn_id, stream.first_seq, stream.follow)

    def first_seq_here(self, turn_id: uuid.UUID) -> int | None:
        """Where the run of this turn that this process runs started (None: it runs nowhere here)."""
        live = self.manager.live(turn_id)
        return None if live is None else live.first_seq

    async def finished(self, tenant_id: str, turn_id: uuid.UUID) -> None:
        """Until the turn's run ends (here, or through the store for a queued turn, until this replica drains)."""
        if self.manager.live(turn_id) is not None:
            await self.manager.wait(turn_id)
            return
        async for _ in self.follow(tenant_id, turn_id, 0):
            pass

    async def follow(self, tenant_id: str, turn_id: uuid.UUID, after: int) -> AsyncIterator[Followed]:
        """Events after `after`: stored ones, then live ones, up to and including the turn's last `turn.ended`.

        A `turn.ended` with status `interrupted` that a decision has since resumed is intermediate:
        the replay goes on through the resumed run (`turn.started` with `resumed_by`) to the end. It
        ends after the final one — any other status, or `interrupted` while the turn still waits for
        its approvals. The caller has checked that it may read the turn.
        """
        settle_polls = 0
        while True:
            live = self.manager.live(turn_id)
            upto = None if live is None else live.first_seq - 1
            async for batch in self._replay(tenant_id, turn_id, after, upto=upto):
                for n, event in enumerate(batch):
                    if event.type == "turn.ended" and not await self._resumed_after(tenant_id, turn_id, event):
                        yield batch[: n + 1]
                        return
                yield batch
                after = batch[-1].seq
            if live is not None:
                async for followed in live.follow(after):
                    yield followed
                return
            if self.manager.draining:
                # A turn queued or run elsewhere outlives this replica: reconnect to another one.
                yield Reconnect(RECONNECT_MS)
                return
            status, last_seq = await self._store.progress(tenant_id, turn_id)
            if status not in WAITING_STATUSES:
                settle_polls += 1
                if last_seq <= after or settle_polls > SETTLE_POLLS:
                    return
            await self.manager.wait_for_events(turn_id, POLL_SECONDS if settle_polls == 0 else 0.05)

    async def _resumed_after(self, tenant_id: str, turn_id: uuid.UUID, ended: LoggedEvent) -> bool:
        """Whether this `turn.ended` is an interrupt that a decision has resumed since."""
        if ended.body().get("status") != "interrupted":
            return False
        status, last_seq = await self._store.progress(tenant_id, turn_id)
        return status != "interrupted" or last_seq > ended.seq

    async def _replay(
        self, tenant_id: str, turn_id: uuid.UUID, after: int, *, upto: int | None
    ) -> AsyncIterator[list[LoggedEvent]]:
        while upto is None or after < upto:
            events = await self._store.events_after(tenant_id, turn_id, after, REPLAY_PAGE)
            shown = [e for e in events if upto is None or e.seq <= upto]
            if shown:
                yield shown
                after = shown[-1].seq
            if len(events) < REPLAY_PAGE or len(shown) < len(events):
                return

    async def cancel(self, tenant_id: str, turn_id: uuid.UUID) -> None:
        """Cancel a queued or active turn wherever it runs (here, another replica, or none); 409 if it has ended."""
        status = await self._store.current_status(tenant_id, turn_id)
        if status == "queued" and await self._queue.cancel(tenant_id, turn_id):
            return
        if status not in ACTIVE_STATUSES:
            raise Conflict(f"Turn {turn_id} is already {status}")
        if not await self.manager.cancel(turn_id):
            remote = status == "running" and await self._cancelled_elsewhere(tenant_id, turn_id)
            if not remote:
                await self.manager.end_orphan(tenant_id, turn_id, status="cancelled", error=None)
        await self._store.expire_pending_approvals(tenant_id, turn_id)

    async def _cancelled_elsewhere(self, tenant_id: str, turn_id: uuid.UUID) -> bool:
        """A running turn this process does not run belongs to another replica, or to a dead one."""
        with contextlib.suppress(TimeoutError):
            return await self.manager.cancel_elsewhere(tenant_id, turn_id)
        return False

    async def close_session(self, tenant_id: str, session_id: uuid.UUID) -> None:
        """After a session closed: its turn still running or waiting for approvals is cancelled, and the
        processes a runtime keeps for it are closed."""
        active = await self._queue.active(tenant_id, session_id)
        if active is not None:
            with contextlib.suppress(Conflict):
                await self.cancel(tenant_id, active["id"])
        for runtime in self._session_runtimes.values():
            await runtime.close_session(session_id)


def _output_schema(request: TurnRequest, snapshot: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request's schema, else the agent's; 422 `output_schema_unsupported` for the claude_sdk runtime."""
    if request.output_schema is not None and snapshot.get("runtime") == "claude_sdk":
        raise RuleViolation(OUTPUT_SCHEMA_UNSUPPORTED, CLAUDE_SDK_NO_SCHEMA)
    schema = request.output_schema or snapshot.get("output_schema")
    return dict(schema) if schema is not None else None


def _busy(active: Mapping[str, Any] | None) -> Conflict:
    if active is None:
        return Conflict("Another turn of this session is active")
    return Conflict(f"Turn {active['id']} of this session is {active['status']}", active_turn_id=str(active["id"]))
