"""Turns: start one (set-up committed before the stream starts), read, follow, cancel."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.config import CLAUDE_SDK_NO_SCHEMA
from app.auth.principal import Principal
from app.auth.stream_token import mint_stream_token
from app.autonomy.plan import Plan
from app.container import Container
from app.core.db import unit_of_work
from app.core.pagination import page_of
from app.core.sql import INTEGRITY_ERRORS
from app.core.sse import encode_frame, retry_frame
from app.errors import Conflict, NotFound, RuleViolation, TooManyRequests
from app.files.attachments import attachments_for
from app.governance.limits import effective_limits
from app.models import ACTIVE_STATUSES, Turn
from app.models.base import utcnow
from app.providers.base import Attachment, ChatMessage
from app.runtime.manager import TurnManager
from app.runtime.port.journal import Supersedes, TurnIdentity, TurnRun
from app.runtime.store.admission import Admission, NoFreeSlot, too_many_turns
from app.runtime.store.queue import QueueFull
from app.runtime.store.quota import token_quota_of
from app.runtime.store.turns import message_row
from app.runtime.stream import RECONNECT_MS, SEQ_BLOCK
from app.sessions.service import SessionService, idle_ttl, session_not_open
from app.structured.schema import OUTPUT_SCHEMA_UNSUPPORTED
from app.turns import schemas
from app.turns.repository import TurnRepository

WAITING_STATUSES = ("running", "queued")
"""A follower of a turn in these states waits for events it has not seen yet."""
QUEUE_RETRY_SECONDS = 5
POLL_SECONDS = 0.5
SETTLE_POLLS = 20
REPLAY_PAGE = 1000
CLAUDE_SDK_RETRY_SECONDS = 5


class TurnService:
    def __init__(self, container: Container, principal: Principal) -> None:
        self.container = container
        self.manager: TurnManager = container.turns
        self.principal = principal

    def uow(self) -> AbstractAsyncContextManager[AsyncSession]:
        return unit_of_work(self.container.session_factory)

    async def start(
        self,
        session_id: uuid.UUID,
        body: schemas.TurnCreate,
        *,
        turn_id: uuid.UUID | None = None,
        supersedes: Supersedes | None = None,
        channel: schemas.Channel = "api",
    ) -> tuple[uuid.UUID, Followable]:
        """Start a turn, or handle the session's active turn as `body.multitask_strategy` says.

        `turn_id` names the new turn (a schedule's firing chooses it in advance, so a retried start
        finds the turn instead of starting a second one); `channel` is the door it came through. `supersedes`:
        the turn regenerates that one (app/branching/regenerate.py), whose messages leave the history in the
        statement that stores it."""
        self.manager.admit()
        try:
            run = await self._create(session_id, body, turn_id=turn_id, supersedes=supersedes, channel=channel)
        except NoFreeSlot as exc:
            # every slot is taken: a turn asked to wait behind its session's active turn waits for a slot too
            if body.multitask_strategy != "enqueue" or await self._active_in(session_id) is None:
                raise too_many_turns(exc.ceiling or 0) from None
            return await self._enqueue(session_id, body, turn_id, channel)
        except INTEGRITY_ERRORS as exc:
            active = await self._active_in(session_id)
            if active is None or body.multitask_strategy == "reject":
                raise _busy(active) from exc
            if body.multitask_strategy == "enqueue":
                return await self._enqueue(session_id, body, turn_id, channel)
            await self._displace(active, rollback=body.multitask_strategy == "rollback")
            try:
                run = await self._create(session_id, body, turn_id=turn_id, channel=channel)
            except INTEGRITY_ERRORS as again:
                raise Conflict("Another turn started in this session meanwhile; try again") from again
        return run.ident.turn_id, self.manager.launch(run)

    async def _active_in(self, session_id: uuid.UUID) -> Turn | None:
        async with self.uow() as db:
            return await TurnRepository(db, self.principal.tenant_id).active_in(session_id)

    async def _enqueue(
        self, session_id: uuid.UUID, body: schemas.TurnCreate, turn_id: uuid.UUID | None, channel: schemas.Channel
    ) -> tuple[uuid.UUID, Followable]:
        run = await self._create(session_id, body, queued=True, turn_id=turn_id, channel=channel)
        ident = run.ident
        self.manager.start_when_idle(ident.tenant_id, ident.session_id, ident.turn_id)
        return ident.turn_id, StoredStream(self, ident.turn_id)

    async def _displace(self, active: Turn, *, rollback: bool) -> None:
        """Cancel the session's queued turns and its active turn; with `rollback`, also remove the
        active turn's messages from the history (its events, receipts and usage stay: the audit trail)."""
        await self.manager.queue.cancel_queued(self.principal.tenant_id, active.session_id)
        with contextlib.suppress(Conflict):
            await self.cancel(active.id)
        if rollback:
            async with self.uow() as db:
                await TurnRepository(db, self.principal.tenant_id).delete_messages(active.id)

    async def _create(
        self,
        session_id: uuid.UUID,
        body: schemas.TurnCreate,
        *,
        queued: bool = False,
        turn_id: uuid.UUID | None = None,
        supersedes: Supersedes | None = None,
        channel: schemas.Channel = "api",
    ) -> TurnRun:
        """Store the turn with its user message, and read the history: the set-up the stream waits for.

        This is the hot path of every turn, so it runs as three single statements (app/core/sql.py)
        rather than an ORM unit of work. The partial unique index on active turns is what guarantees
        one active turn per session; a second start fails on it and is answered with 409.
        """
        session = await self.manager.store.session_for_turn(
            self.principal.tenant_id, session_id, self.principal.writer.sub
        )
        if session is None:
            raise NotFound(f"Session {session_id} not found")
        now = utcnow()
        status = session["status"]
        if status == "open" and idle_ttl(self.container).may_have_expired(session["last_active_at"], now):
            status = await self._session_status(session_id)
        if status != "open":
            raise session_not_open(session_id, status)
        self._admit_runtime(session["id"], session["snapshot"])
        output_schema = _output_schema(body, session["snapshot"])
        attachments = await self._attachments(body, session)
        admission = Admission.of(session)
        admission.check_quota(now)
        asked = body.limits.model_dump(exclude_none=True, exclude={"max_steps"}) if body.limits else {}
        max_steps = self._admit_mode(body, session["snapshot"])
        limits = effective_limits(admission.ceilings, session["snapshot"].get("limits", {}), asked)
        ident = TurnIdentity(session["tenant_id"], session["id"], turn_id or uuid.uuid4(), session["agent_id"])
        turn = {
            "id": ident.turn_id, "tenant_id": ident.tenant_id, "session_id": session["id"], "status": "running",
            "input": body.text(), "max_loops": limits.max_loops, "max_output_tokens": limits.max_output_tokens,
            "max_total_tokens": limits.max_total_tokens, "owner_sub": session["owner_sub"],
            "runner_id": self.manager.runner_id, "input_tokens": 0, "output_tokens": 0, "loop_count": 0,
            "last_seq": 0, "seq_ceiling": SEQ_BLOCK, "created_at": now, "updated_at": now, "mode": body.mode,
            "max_steps": max_steps, "channel": channel, "output_schema": output_schema,
            "attachments": [dataclasses.asdict(a) for a in attachments] if queued and attachments else None,
        }  # fmt: skip
        if supersedes is not None:
            turn["supersedes_turn_id"] = supersedes.turn_id
        if queued:
            await self._store_queued(turn)
            history: list[ChatMessage] = []
        else:
            user_message = message_row(ident, ChatMessage(role="user", content=body.text(), attachments=attachments))
            ceiling = admission.ceilings.max_concurrent_turns
            history = await self.manager.store.start_turn(turn, user_message, max_concurrent=ceiling)
        return TurnRun(
            ident=ident,
            agent_version=session["agent_version"],
            owner_sub=session["owner_sub"],
            snapshot=session["snapshot"],
            input=body.text(),
            history=history,
            max_loops=limits.max_loops,
            max_output_tokens=limits.max_output_tokens,
            max_total_tokens=limits.max_total_tokens,
            token_quota=token_quota_of(admission.ceilings),
            mode=body.mode,
            max_steps=max_steps or 0,
            seq_ceiling=SEQ_BLOCK,
            output_schema=output_schema,
            supersedes=supersedes,
        )

    async def _attachments(self, body: schemas.TurnCreate, session: Mapping[str, Any]) -> tuple[Attachment, ...]:
        parts = [(p.type, p.file_id) for p in body.file_parts()]
        if not parts:
            return ()
        async with self.uow() as db:
            return await attachments_for(db, self.principal, parts, session["snapshot"], session["id"])

    async def _session_status(self, session_id: uuid.UUID) -> str:
        """The status of a session whose last turn started longer ago than the TTL (off the hot path)."""
        async with self.uow() as db:
            service = self._sessions(db)
            return await service.status_of(await service.get(session_id))

    def _sessions(self, db: AsyncSession) -> SessionService:
        return SessionService(db, self.principal, ttl=idle_ttl(self.container))

    async def _store_queued(self, turn: dict[str, Any]) -> None:
        try:
            await self.manager.queue.enqueue(turn)
        except QueueFull as exc:
            raise TooManyRequests("queue_full", str(exc), retry_after=QUEUE_RETRY_SECONDS) from exc

    def _admit_mode(self, body: schemas.TurnCreate, snapshot: dict[str, Any]) -> int | None:
        """An autonomous turn's step bound; 422 `autonomy_disabled` where the service or the agent forbids it."""
        if body.mode != "autonomous":
            return None
        autonomy = snapshot.get("autonomy") or {}
        if not self.container.settings.autonomy_enabled:
            raise RuleViolation("autonomy_disabled", "autonomous turns are disabled in this service (AUTONOMY_ENABLED)")
        if not autonomy.get("enabled", False):
            raise RuleViolation("autonomy_disabled", "this agent does not allow autonomous turns (autonomy.enabled)")
        asked = body.limits.max_steps if body.limits else None
        return min(x for x in (int(autonomy.get("max_steps", 12)), asked) if x is not None)

    def _admit_runtime(self, session_id: uuid.UUID, snapshot: dict[str, Any]) -> None:
        """A `claude_sdk` turn needs a Claude Code process of this replica: 429 while all are busy."""
        runtime = self.container.claude_sdk
        if snapshot.get("runtime") == "claude_sdk" and not runtime.admits(session_id):
            raise TooManyRequests(
                "too_many_turns",
                f"this replica already runs its maximum of {runtime.pool.max_sessions} Claude Code sessions",
                retry_after=CLAUDE_SDK_RETRY_SECONDS,
            )

    async def get(self, turn_id: uuid.UUID) -> schemas.Turn:
        async with self.uow() as db:
            turn = await self.load(db, turn_id)
            if turn.mode != "autonomous":
                return schemas.Turn.of(turn)
            events = await TurnRepository(db, self.principal.tenant_id).plan_events(turn_id)
        steps = Plan.of_events(events).steps
        plan = [schemas.PlanItem(id=s.id, title=s.title, status=s.status, output=s.output) for s in steps]  # type: ignore[arg-type]
        return schemas.Turn.of(turn, plan)

    async def load(self, db: AsyncSession, turn_id: uuid.UUID) -> Turn:
        turn = await TurnRepository(db, self.principal.tenant_id).get(self.principal, turn_id)
        if turn is None:
            raise NotFound(f"Turn {turn_id} not found")
        return turn

    async def list(self, session_id: uuid.UUID, *, limit: int, cursor: str | None) -> schemas.TurnPage:
        async with self.uow() as db:
            await self._sessions(db).get(session_id)
            rows = await TurnRepository(db, self.principal.tenant_id).page(
                self.principal, session_id, limit=limit, cursor=cursor
            )
        items, next_cursor = page_of(rows, limit)
        return schemas.TurnPage(items=[schemas.Turn.of(t) for t in items], next_cursor=next_cursor)

    async def stream_token(self, turn_id: uuid.UUID) -> schemas.StreamToken:
        """Only for a turn the caller may read: the token carries the same tenant and owner checks."""
        await self.get(turn_id)
        assert self.container.signing is not None
        minted = mint_stream_token(
            self.container.signing, self.principal, turn_id, issuer=self.container.settings.signing.issuer
        )
        return schemas.StreamToken(token=minted.token, expires_in=minted.expires_in)

    async def finished(self, turn_id: uuid.UUID) -> schemas.Turn:
        """Wait for the turn's run to end (here, or through the store for a queued turn, until this replica
        drains), then read it."""
        if self.manager.live(turn_id) is not None:
            await self.manager.wait(turn_id)
        else:
            async for _ in self.follow(turn_id, 0):
                pass
        return await self.get(turn_id)

    async def cancel(self, turn_id: uuid.UUID) -> schemas.Turn:
        current = await self.get(turn_id)
        if current.status == "queued" and await self.manager.queue.cancel(self.principal.tenant_id, turn_id):
            return await self.get(turn_id)
        if current.status not in ACTIVE_STATUSES:
            raise Conflict(f"Turn {turn_id} is already {current.status}")
        if not await self.manager.cancel(turn_id):
            remote = current.status == "running" and await self._cancelled_elsewhere(turn_id)
            if not remote:
                await self.manager.end_orphan(self.principal.tenant_id, turn_id, status="cancelled", error=None)
        async with self.uow() as db:
            await TurnRepository(db, self.principal.tenant_id).expire_pending_approvals(turn_id)
        return await self.get(turn_id)

    async def _cancelled_elsewhere(self, turn_id: uuid.UUID) -> bool:
        """A running turn this process does not run belongs to another replica, or to a dead one."""
        with contextlib.suppress(TimeoutError):
            return await self.manager.cancel_elsewhere(self.principal.tenant_id, turn_id)
        return False

    async def close_session(self, session_id: uuid.UUID) -> None:
        """Close a session; a turn still running or waiting for approvals in it is cancelled."""
        async with self.uow() as db:
            await self._sessions(db).close(session_id)
            active = await TurnRepository(db, self.principal.tenant_id).active_in(session_id)
        if active is not None:
            with contextlib.suppress(Conflict):
                await self.cancel(active.id)
        await self.container.claude_sdk.close_session(session_id)

    async def follow(self, turn_id: uuid.UUID, after: int) -> AsyncIterator[bytes]:
        """Frames after `after`: stored ones, then live ones, up to and including the turn's last `turn.ended`.

        A `turn.ended` with status `interrupted` that a decision has since resumed is intermediate:
        the replay goes on through the resumed run (`turn.started` with `resumed_by`) to the end. The
        stream closes after the final one — any other status, or `interrupted` while the turn still
        waits for its approvals.
        """
        await self.get(turn_id)
        settle_polls = 0
        while True:
            live = self.manager.live(turn_id)
            upto = None if live is None else live.first_seq - 1
            async for seq, frame, event_type in self._replay(turn_id, after, upto=upto):
                yield frame
                after = seq
                if event_type == "turn.ended" and not await self._resumed_after(turn_id, seq, frame):
                    return
            if live is not None:
                async for frame in live.follow(after):
                    yield frame
                return
            if self.manager.draining:
                # A turn queued or run elsewhere outlives this replica: reconnect to another one.
                yield retry_frame(RECONNECT_MS)
                return
            current = await self.get(turn_id)
            if current.status not in WAITING_STATUSES:
                settle_polls += 1
                if current.last_seq <= after or settle_polls > SETTLE_POLLS:
                    return
            await self.manager.wait_for_events(turn_id, POLL_SECONDS if settle_polls == 0 else 0.05)

    async def _resumed_after(self, turn_id: uuid.UUID, seq: int, frame: bytes) -> bool:
        """Whether the `turn.ended` at `seq` is an interrupt that a decision has resumed since."""
        if orjson.loads(frame.split(b"\ndata: ", 1)[1]).get("status") != "interrupted":
            return False
        current = await self.get(turn_id)
        return current.status != "interrupted" or current.last_seq > seq

    async def _replay(
        self, turn_id: uuid.UUID, after: int, *, upto: int | None
    ) -> AsyncIterator[tuple[int, bytes, str]]:
        while upto is None or after < upto:
            async with self.uow() as db:
                rows = await TurnRepository(db, self.principal.tenant_id).events_after(turn_id, after, REPLAY_PAGE)
            for seq, event_type, data in rows:
                if upto is not None and seq > upto:
                    return
                yield seq, encode_frame(seq, event_type, data), event_type
                after = seq
            if len(rows) < REPLAY_PAGE:
                return


class Followable(Protocol):
    """What a started turn is followed through: its live stream here, or the store."""

    @property
    def first_seq(self) -> int: ...

    def follow(self, after: int) -> AsyncIterator[bytes]: ...


class StoredStream:
    """A turn followed through the store: a queued turn that starts later, maybe on another replica."""

    first_seq = 1

    def __init__(self, service: TurnService, turn_id: uuid.UUID) -> None:
        self._service = service
        self._turn_id = turn_id

    def follow(self, after: int) -> AsyncIterator[bytes]:
        return self._service.follow(self._turn_id, after)


def _busy(active: Turn | None) -> Conflict:
    if active is None:
        return Conflict("Another turn of this session is active")
    return Conflict(f"Turn {active.id} of this session is {active.status}", active_turn_id=str(active.id))


def _output_schema(body: schemas.TurnCreate, snapshot: dict[str, Any]) -> dict[str, Any] | None:
    """The turn request's schema, else the agent's; 422 `output_schema_unsupported` for the claude_sdk runtime."""
    if body.output_schema is not None and snapshot.get("runtime") == "claude_sdk":
        raise RuleViolation(OUTPUT_SCHEMA_UNSUPPORTED, CLAUDE_SDK_NO_SCHEMA)
    schema: dict[str, Any] | None = body.output_schema or snapshot.get("output_schema")
    return schema
