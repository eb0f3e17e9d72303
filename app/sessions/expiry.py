"""`SESSION_IDLE_TTL_SECONDS` is a promise, not a sweep interval: a session idle past it is `expired` from
that instant on, when read and when a turn or a decision asks for it, whether or not the sweep
(app/sessions/sweeper.py) has stored it yet. The sweep and every read apply this one rule.

Idle means: no turn started (`last_active_at`) and the latest turn last changed (`turn_at`, e.g. it
ended or began to wait for approvals) longer ago than the TTL, and that turn is neither running nor
queued. A session's expiry instant is therefore its last activity plus the TTL; the sweep stores
that instant as `closed_at`, so a read before and after the sweep shows the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

BUSY_TURNS = frozenset({"running", "queued"})
"""A session whose latest turn is in one of these states is never idle, however old its activity."""


@dataclass(frozen=True, slots=True)
class Activity:
    last_active_at: datetime
    turn_status: str | None = None
    """Its latest turn's status (None: no turn yet)."""
    turn_at: datetime | None = None
    """When its latest turn last changed."""

    def idle_since(self) -> datetime | None:
        """The session's last activity, or None while its latest turn runs or waits in the queue."""
        if self.turn_status in BUSY_TURNS:
            return None
        if self.turn_at is None:
            return self.last_active_at
        return max(self.last_active_at, self.turn_at)


@dataclass(frozen=True, slots=True)
class IdleTtl:
    seconds: int
    """0: sessions never expire."""

    def cutoff(self, now: datetime) -> datetime | None:
        """Activity before this instant is too old; None when sessions never expire."""
        return now - timedelta(seconds=self.seconds) if self.seconds else None

    def may_have_expired(self, last_active_at: datetime, now: datetime) -> bool:
        """Whether the latest turn must be read to tell (a turn started within the TTL keeps it open)."""
        cutoff = self.cutoff(now)
        return cutoff is not None and last_active_at < cutoff

    def expired_at(self, activity: Activity, now: datetime) -> datetime | None:
        """When the session expired, if it has by `now`; else None."""
        since = activity.idle_since()
        if not self.seconds or since is None:
            return None
        at = since + timedelta(seconds=self.seconds)
        return at if at < now else None
