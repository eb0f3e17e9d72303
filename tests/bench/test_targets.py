"""The bench's verdicts (bench/report.py): pure functions of the rows, no timing."""

from __future__ import annotations

from typing import Any

import pytest

from bench.report import (
    AR,
    FEATURE_OFF,
    FLOOR,
    Row,
    Target,
    add_ratios,
    all_targets,
    cpu_targets,
    db_count_targets,
    feature_targets,
    idle_targets,
    openai_targets,
    pg_targets,
    targets_text,
    throughput_targets,
    ttft_targets,
)


def row(scenario: str, server: str, concurrency: int, **figures: Any) -> Row:
    base: dict[str, Any] = {
        "turns_ok": 100,
        "errors": 0,
        "wall_s": 1.0,
        "turns_per_s": 10.0,
        "ttft_p50_ms": 10.0,
        "ttft_p99_ms": None,
        "ttfe_p50_ms": None,
        "latency_p50_ms": None,
        "latency_p99_ms": None,
        "cpu_ms_per_turn": 10.0,
        "pg_cpu_ms_per_turn": None,
        "client_cpu_ms_per_turn": None,
        "mock_cpu_ms_per_turn": None,
    }
    return Row(scenario=scenario, server=server, concurrency=concurrency, **{**base, **figures})


def pair(scenario: str, concurrency: int, **ar_figures: Any) -> list[Row]:
    return [row(scenario, FLOOR, concurrency), row(scenario, AR, concurrency, **ar_figures)]


def by_name(targets: list[Target]) -> dict[str, Target]:
    return {t.name: t for t in targets}


@pytest.mark.parametrize(
    ("measured", "comparison", "verdict"),
    [(1.2, "<=", "PASS"), (1.21, "<=", "MISS"), (0.8, ">=", "PASS"), (0.79, ">=", "MISS"), (2048, "<", "MISS")],
)
def test_a_target_compares_its_measurement_with_its_limit(measured: float, comparison: str, verdict: str) -> None:
    limit = {"<=": 1.2, ">=": 0.8, "<": 2048}[comparison]
    assert Target("t", measured, limit, comparison).verdict == verdict


def test_a_missing_measurement_is_never_a_pass() -> None:
    assert Target("t", None, 1.2, "<=").verdict == "n/a"
    assert all(t.verdict == "n/a" for t in all_targets([], idle_streams=1000, db_per_turn={}, features=["otlp"]))


def test_cpu_limits_differ_for_text_and_tool_at_every_client_count() -> None:
    rows = pair("text", 1, cpu_ms_per_turn=12.0) + pair("tool", 1, cpu_ms_per_turn=12.5) + pair("text", 50)
    add_ratios(rows)
    targets = by_name(cpu_targets(rows))
    assert targets["server CPU/turn vs floor, text @1"].verdict == "PASS"  # 1.2x at the text limit
    assert targets["server CPU/turn vs floor, tool @1"].verdict == "PASS"  # 1.25x under the tool limit
    assert targets["server CPU/turn vs floor, text @50"].measured == 1.0
    assert targets["server CPU/turn vs floor, tool @10"].verdict == "n/a"
    assert len(targets) == 6


def test_throughput_and_ttft_are_ratios_at_their_own_client_counts() -> None:
    rows = pair("text", 50, turns_per_s=7.9) + pair("tool", 50, turns_per_s=7.0) + pair("text", 1, ttft_p50_ms=21.0)
    add_ratios(rows)
    throughput = by_name(throughput_targets(rows))
    assert throughput["turns/s vs floor, text @50"].verdict == "MISS"
    assert throughput["turns/s vs floor, tool @50"].verdict == "PASS"
    ttft = by_name(ttft_targets(rows))
    assert ttft["TTFT p50 vs floor, text @1"].verdict == "MISS"
    assert ttft["TTFT p50 vs floor, tool @1"].verdict == "n/a"


def test_postgres_cpu_is_judged_in_ms_at_fifty_clients_only() -> None:
    rows = [row("text", AR, 50, pg_cpu_ms_per_turn=3.0), row("tool", AR, 50, pg_cpu_ms_per_turn=3.6)]
    rows.append(row("tool", AR, 1, pg_cpu_ms_per_turn=1.0))
    targets = by_name(pg_targets(rows))
    assert targets["PostgreSQL CPU/turn, text @50"].verdict == "PASS"
    assert targets["PostgreSQL CPU/turn, tool @50"].verdict == "MISS"


def test_statement_and_commit_counts_of_a_tool_turn_judge_the_commits_that_write() -> None:
    counted = {"tool": {"statements": 11.0, "commits": 11.0, "writes": 3.0}, "text": {"statements": 1.0}}
    targets = by_name(db_count_targets(counted))
    assert targets["statements per tool turn"].verdict == "MISS"
    assert targets["commits that write, per tool turn"].verdict == "PASS"
    assert "all commits 11.0" in targets["commits that write, per tool turn"].note
    assert all(t.verdict == "n/a" for t in db_count_targets({}))


def test_idle_streams_need_all_open_at_once_no_errors_and_rss_under_two_gib_and_say_when_the_run_was_smaller() -> None:
    ok = idle_targets([row("idle", AR, 1000, peak_open_streams=1000, peak_rss_mib=300.0)], 1000)
    assert [t.verdict for t in ok] == ["PASS", "PASS", "PASS"]
    assert ok[0].name == "1,000 open streams: open at once >= 1,000 (all of this run, not the target)"
    assert "the target is for 10,000" in ok[0].note
    failed = idle_targets([row("idle", AR, 10_000, peak_open_streams=9956, errors=3, peak_rss_mib=2048.0)], 10_000)
    assert [t.verdict for t in failed] == ["MISS", "MISS", "MISS"]
    assert failed[0].name == "10,000 open streams: open at once >= 10,000 (the target)"
    assert "at most 9956 open at once" in failed[0].note
    assert "the target is for" not in failed[0].note
    more = idle_targets([row("idle", AR, 12_000, peak_open_streams=10_500, peak_rss_mib=900.0)], 12_000)
    assert [t.verdict for t in more] == ["PASS", "PASS", "PASS"]
    assert [t.verdict for t in idle_targets([], 10_000)] == ["n/a", "n/a", "n/a"]


def test_feature_rows_are_ratios_to_the_floor_and_to_the_off_run_of_their_pass() -> None:
    rows = [
        row("text", FLOOR, 10, feature=FEATURE_OFF),
        row("text", AR, 10, feature=FEATURE_OFF, cpu_ms_per_turn=11.0, pg_cpu_ms_per_turn=2.0),
        row("text", AR, 10, feature="otlp", cpu_ms_per_turn=13.2, pg_cpu_ms_per_turn=2.0),
        row("text", FLOOR, 10, cpu_ms_per_turn=1.0),  # the main run's floor: not the features pass's
    ]
    add_ratios(rows)
    otlp = rows[2]
    assert otlp.ratio["cpu_vs_off"] == 1.2
    assert otlp.ratio["pg_vs_off"] == 1.0
    assert otlp.ratio["cpu_per_turn"] == 1.32
    targets = by_name(feature_targets(rows, ["otlp", "webhook"]))
    assert targets["server CPU/turn vs floor, text +otlp"].verdict == "MISS"
    assert targets["server CPU/turn vs floor, text +webhook"].verdict == "n/a"
    assert "cpu_vs_off" not in rows[1].ratio


def test_main_targets_ignore_the_features_pass_rows() -> None:
    rows = [row("text", FLOOR, 10, feature=FEATURE_OFF), row("text", AR, 10, feature=FEATURE_OFF)]
    add_ratios(rows)
    assert by_name(cpu_targets(rows))["server CPU/turn vs floor, text @10"].verdict == "n/a"


def test_openai_ratios_must_be_within_a_fifth_of_the_anthropic_ones() -> None:
    rows = pair("text", 1, cpu_ms_per_turn=12.0) + pair("openai-text", 1, cpu_ms_per_turn=14.5)
    rows += pair("tool", 1, cpu_ms_per_turn=13.0) + pair("openai-tool", 1, cpu_ms_per_turn=14.0)
    add_ratios(rows)
    targets = by_name(openai_targets(rows))
    text = targets["openai vs anthropic server CPU/turn, text @1"]
    assert (text.measured, text.verdict) == (0.25, "MISS")
    assert text.note == "openai 1.45x, anthropic 1.2x"
    assert targets["openai vs anthropic server CPU/turn, tool @1"].verdict == "PASS"
    assert targets["openai vs anthropic server CPU/turn, tool @10"].verdict == "n/a"


def test_the_printed_table_has_one_line_per_target_and_a_tally() -> None:
    items = [Target("a", 1.0, 1.2, "<=", "x"), Target("b", 2.0, 1.2, "<=", "x"), Target("c", None, 3, "<=", "ms")]
    lines = targets_text(items).splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["PASS", "MISS", "n/a"]
    assert lines[-1].strip() == "1 PASS, 1 MISS, 1 n/a"
    assert Target("c", None, 3, "<=").as_dict()["verdict"] == "n/a"
