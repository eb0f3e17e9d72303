"""The Claude Code processes of this replica: one SDK client per active session, bounded in number.

A session's client is started by its first turn and reused by the next ones (Claude Code keeps the
conversation); it is closed when the session closes, after `idle_seconds` without a turn, or to make
room for another session when the pool is full and it is idle. When every client is busy in a turn,
a new session's turn is refused (`PoolFull`, which the API answers 429 `too_many_turns`): the number
of processes this replica forks never exceeds `max_sessions`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger(__name__)
REAP_INTERVAL_SECONDS = 5.0


class SdkClient(Protocol):
    """What the pool needs of a `ClaudeSDKClient` (connect and disconnect)."""

    async def connect(self) -> None: ...

    async def disconnect(self) -> None: ...


class PoolFull(Exception):
    """Every Claude Code process of this replica is busy in a turn."""

    def __init__(self, max_sessions: int) -> None:
        super().__init__(f"this replica already runs its maximum of {max_sessions} Claude Code sessions")
        self.max_sessions = max_sessions


@dataclass(slots=True)
class Lease:
    """One session's live client; `busy` while a turn uses it."""

    session_id: uuid.UUID
    client: SdkClient
    started_seconds: float
    """How long starting Claude Code took (connect, up to its `initialize` answer)."""
    busy: bool = False
    last_used: float = field(default_factory=time.monotonic)
    turns: int = 0


Opener = Callable[[uuid.UUID], Awaitable[SdkClient]]
"""Builds (does not connect) the client of a session."""


class ClientPool:
    def __init__(self, *, max_sessions: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._leases: dict[uuid.UUID, Lease] = {}
        self._starting = 0
        self._lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._leases)

    def admits(self, session_id: uuid.UUID) -> bool:
        """Whether a turn of this session gets a client now: its own, a free slot, or an idle one to close."""
        if session_id in self._leases or len(self._leases) + self._starting < self.max_sessions:
            return True
        return any(not lease.busy for lease in self._leases.values())

    def get(self, session_id: uuid.UUID) -> Lease | None:
        return self._leases.get(session_id)

    @contextlib.asynccontextmanager
    async def use(self, session_id: uuid.UUID, opener: Opener) -> AsyncIterator[Lease]:
        """The session's client for one turn: reused, or started (raises PoolFull)."""
        lease = await self._take(session_id, opener)
        try:
            yield lease
        finally:
            lease.busy = False
            lease.turns += 1
            lease.last_used = self._clock()

    async def _take(self, session_id: uuid.UUID, opener: Opener) -> Lease:
        async with self._lock:
            lease = self._leases.get(session_id)
            if lease is not None:
                lease.busy = True
                return lease
            victim = self._make_room()
            self._starting += 1
        try:
            if victim is not None:
                await _disconnect(victim)
            started = time.perf_counter()
            client = await opener(session_id)
            await client.connect()
            lease = Lease(session_id, client, time.perf_counter() - started, busy=True, last_used=self._clock())
        finally:
            self._starting -= 1
        self._leases[session_id] = lease
        return lease

    def _make_room(self) -> Lease | None:
        """The idle client to close for a new one, if the pool is full; PoolFull if none is idle."""
        if len(self._leases) + self._starting < self.max_sessions:
            return None
        idle = [lease for lease in self._leases.values() if not lease.busy]
        if not idle:
            raise PoolFull(self.max_sessions)
        victim = min(idle, key=lambda lease: lease.last_used)
        del self._leases[victim.session_id]
        return victim

    async def close(self, session_id: uuid.UUID) -> bool:
        """Close a session's client (session closed or expired); False if it had none."""
        lease = self._leases.pop(session_id, None)
        if lease is None:
            return False
        await _disconnect(lease)
        return True

    async def reap(self) -> int:
        """Close the clients idle for longer than `idle_seconds`."""
        now = self._clock()
        stale = [
            lease for lease in self._leases.values() if not lease.busy and now - lease.last_used >= self.idle_seconds
        ]
        for lease in stale:
            if self._leases.get(lease.session_id) is lease:
                del self._leases[lease.session_id]
                await _disconnect(lease)
        return len(stale)

    def start_reaper(self, interval: float = REAP_INTERVAL_SECONDS) -> None:
        async def run() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.reap()
                except Exception:
                    log.exception("closing idle Claude Code sessions failed")

        self._reaper = asyncio.create_task(run(), name="claude-sdk-reaper")

    async def close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        leases, self._leases = list(self._leases.values()), {}
        await asyncio.gather(*(_disconnect(lease) for lease in leases))


async def _disconnect(lease: Lease) -> None:
    try:
        await lease.client.disconnect()
    except Exception:
        log.warning("closing the Claude Code session of %s failed", lease.session_id, exc_info=True)
