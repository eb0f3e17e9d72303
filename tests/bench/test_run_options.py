"""`python -m bench.run`'s options that choose what runs (no servers started)."""

from __future__ import annotations

import pytest

from bench.features import FEATURE_NAMES
from bench.plan import Plan, build_parser, make_plan


def plan_of(*argv: str) -> Plan:
    return make_plan(build_parser().parse_args(list(argv)))


def test_idle_takes_the_stream_count_and_idle_streams_stays_its_alias() -> None:
    assert plan_of("--idle", "10000").idle_streams == 10_000
    assert plan_of("--idle-streams", "500").idle_streams == 500
    assert plan_of().idle_streams == 1000
    assert plan_of("--quick").idle_streams == 100


def test_the_features_pass_is_on_by_default_and_can_be_skipped_or_narrowed() -> None:
    assert plan_of().features == list(FEATURE_NAMES)
    assert plan_of("--quick").features == list(FEATURE_NAMES)
    assert plan_of("--skip-features").features == []
    assert plan_of("--features", "otlp").features == ["otlp"]
    assert plan_of("--scenarios", "idle,scripted").features == []


def test_unknown_features_are_refused() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--features", "gpu"])


def test_db_stats_is_off_unless_asked() -> None:
    assert plan_of().db_stats is False
    assert plan_of("--db-stats").db_stats is True


def test_the_idle_run_cap_grows_with_its_streams_unless_given() -> None:
    # ramp (streams / rate) + hold (ramp + 20 s) + 120 s
    assert plan_of().idle_timeout == 10 + 30 + 120
    assert plan_of("--idle", "10000").idle_timeout == 100 + 120 + 120
    assert plan_of("--idle", "10000", "--idle-rate", "200", "--idle-hold", "90").idle_timeout == 50 + 90 + 120
    assert plan_of("--idle", "10000", "--idle-timeout", "300").idle_timeout == 300.0


def test_the_idle_ramp_spreads_its_streams_over_driver_processes() -> None:
    ramp = plan_of("--idle", "10000").idle_ramp
    assert (ramp.rate, ramp.opening, ramp.drivers, ramp.hold) == (100.0, 100, 4, 120.0)
    assert ramp.turn_timeout == 100 + 120 + 60
    assert plan_of("--idle", "1000").idle_ramp.drivers == 1
    assert plan_of("--idle", "10000", "--idle-clients", "8", "--idle-opening", "40").idle_ramp.drivers == 8
