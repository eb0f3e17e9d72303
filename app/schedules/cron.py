"""Cron expressions in an IANA time zone: validation and the next tick after a moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

MAX_CRON_CHARS = 128


class InvalidSchedule(ValueError):
    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidSchedule(f"{name!r} is not an IANA time zone", field="timezone") from exc


def next_tick(cron: str, timezone: str, after: datetime) -> datetime:
    """The first tick strictly after `after`, in UTC; the schedule's wall clock decides (DST included)."""
    local = after.astimezone(zone(timezone))
    tick: datetime = croniter(cron, local).get_next(datetime)
    return tick.astimezone(UTC)


def validate(cron: str, timezone: str, *, min_interval_seconds: int, now: datetime) -> None:
    """Raise `InvalidSchedule` for a bad expression, an unknown zone, or ticks closer than allowed."""
    fields = cron.split()
    if len(cron) > MAX_CRON_CHARS or len(fields) not in (5, 6) or not croniter.is_valid(cron):
        raise InvalidSchedule(f"{cron!r} is not a cron expression (5 fields, or 6 with seconds last)", field="cron")
    first = next_tick(cron, timezone, now)
    second = next_tick(cron, timezone, first)
    third = next_tick(cron, timezone, second)
    if min(second - first, third - second) < timedelta(seconds=min_interval_seconds):
        raise InvalidSchedule(
            f"{cron!r} fires more often than every {min_interval_seconds} s, the least interval allowed",
            field="cron",
        )
