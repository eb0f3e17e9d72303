"""Quota periods: calendar days and months in UTC."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Literal

Period = Literal["day", "month"]


def period_bounds(period: str, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the period that contains `now`."""
    now = now.astimezone(UTC)
    if period == "day":
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        return start, start + timedelta(days=1)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return start, end


def period_starts(now: datetime) -> dict[str, datetime]:
    """The current start of every period, by name."""
    return {"day": period_bounds("day", now)[0], "month": period_bounds("month", now)[0]}


def seconds_until(end: datetime, now: datetime) -> int:
    return max(1, math.ceil((end - now).total_seconds()))
