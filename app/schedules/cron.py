"""Cron expressions in an IANA time zone: validation and the next tick after a moment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterBadDateError, croniter

MAX_CRON_CHARS = 128
HORIZON_YEARS = 8
"""An expression must fire within this many years of any tick (29 February fires every 4, or 8 around 2100)."""


class InvalidSchedule(ValueError):
    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def zone(name: str) -> ZoneInfo:
    """The named zone; a folder of the zone database (`America`, `Etc`) or any other non-zone is refused."""
    if name not in _zone_names():
        raise InvalidSchedule("not an IANA time zone (such as Europe/Berlin or UTC)", field="timezone")
    return ZoneInfo(name)


def next_tick(cron: str, timezone: str, after: datetime) -> datetime:
    """The first tick strictly after `after`, in UTC; the schedule's wall clock decides (DST included).
    An expression with no tick within `HORIZON_YEARS` (`0 0 31 2 *`) raises `InvalidSchedule`."""
    local = after.astimezone(zone(timezone))
    try:
        tick: datetime = croniter(cron, local, max_years_between_matches=HORIZON_YEARS).get_next(datetime)
    except CroniterBadDateError as exc:
        raise InvalidSchedule(f"the expression never fires within {HORIZON_YEARS} years", field="cron") from exc
    return tick.astimezone(UTC)


def validate(cron: str, timezone: str, *, min_interval_seconds: int, now: datetime) -> None:
    """Raise `InvalidSchedule` for a bad expression, an unknown zone, or ticks closer than allowed."""
    fields = cron.split()
    if len(cron) > MAX_CRON_CHARS or len(fields) not in (5, 6) or not croniter.is_valid(cron):
        raise InvalidSchedule("not a cron expression (5 fields, or 6 with seconds last)", field="cron")
    first = next_tick(cron, timezone, now)
    second = next_tick(cron, timezone, first)
    third = next_tick(cron, timezone, second)
    if min(second - first, third - second) < timedelta(seconds=min_interval_seconds):
        raise InvalidSchedule(
            f"the expression fires more often than every {min_interval_seconds} s, the least interval allowed",
            field="cron",
        )
