"""The idle rule the sweep and every read share (app/sessions/expiry.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.sessions.expiry import Activity, IdleTtl

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
TTL = IdleTtl(3600)
LONG_AGO = NOW - timedelta(hours=3)


def test_a_session_expires_its_ttl_after_its_last_activity() -> None:
    assert TTL.expired_at(Activity(LONG_AGO), NOW) == LONG_AGO + timedelta(hours=1)
    assert TTL.expired_at(Activity(NOW - timedelta(minutes=59)), NOW) is None


def test_its_latest_turn_changing_late_counts_as_activity() -> None:
    ended = NOW - timedelta(minutes=90)
    assert TTL.expired_at(Activity(LONG_AGO, "completed", ended), NOW) == ended + timedelta(hours=1)
    assert TTL.expired_at(Activity(LONG_AGO, "interrupted", NOW - timedelta(minutes=5)), NOW) is None


@pytest.mark.parametrize("status", ["running", "queued"])
def test_a_busy_turn_keeps_its_session_open_however_old(status: str) -> None:
    assert TTL.expired_at(Activity(LONG_AGO, status, LONG_AGO), NOW) is None


def test_a_ttl_of_zero_never_expires() -> None:
    assert IdleTtl(0).expired_at(Activity(LONG_AGO - timedelta(days=900)), NOW) is None
    assert not IdleTtl(0).may_have_expired(LONG_AGO, NOW)
