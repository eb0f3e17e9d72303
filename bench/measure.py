"""One measured run (CPU of the server, PostgreSQL and the client around a load) and the run's state."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench import cpu
from bench.agents import TurnFactory, ar_fn, floor_fn
from bench.db import BenchDatabase
from bench.load import ArTarget, FloorTarget, LoadResult, run_load
from bench.log import log
from bench.plan import Plan
from bench.procs import Proc
from bench.report import FEATURE_OFF, Row, make_row
from bench.servers import OPENAI_SCENARIOS


@dataclass
class Run:
    plan: Plan
    db: BenchDatabase
    token: str = ""
    agents: dict[str, str] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    pg_connections: dict[str, int] = field(default_factory=dict)
    loadavg_at_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pool: dict[str, str] = field(default_factory=dict)
    tenant_limits: bool = False
    """The bench tenant has a token quota and a concurrent-turn ceiling (issue 11's hot-path cost)."""
    db_per_turn: dict[str, dict[str, float]] = field(default_factory=dict)
    """`--db-stats`: statements, commits and rollbacks per turn, by scenario."""
    db_turns: dict[str, int] = field(default_factory=dict)
    sink_url: str = ""
    sink_received: dict[str, int] = field(default_factory=dict)


async def measure(
    run: Run,
    *,
    scenario: str,
    server: str,
    proc: Proc,
    mock: Proc | None,
    fn: TurnFactory,
    concurrency: int,
    turns: int,
    cap: float,
    sample_rss: bool = False,
    feature: str = "",
    settle: Callable[[int], Awaitable[None]] | None = None,
    load_fn: Callable[[], Awaitable[LoadResult]] | None = None,
) -> Row:
    """One measured run; `settle(turns)`, when given, runs after the load and inside the measured window.
    `load_fn`, when given, drives the load instead of `run_load` of `fn` (the idle run's ramp)."""
    await asyncio.sleep(0.3)  # let the previous run's trailing work finish
    pg = cpu.PostgresCpu(run.db.name)
    rss = cpu.RssSampler(proc.pid) if sample_rss else None
    server0 = cpu.tree_cpu_seconds(proc.pid)
    mock0 = cpu.tree_cpu_seconds(mock.pid) if mock else None
    client0 = cpu.self_cpu_seconds()
    pg.start()
    if rss:
        rss.start()
    try:
        if load_fn is not None:
            load: LoadResult = await load_fn()
        else:
            load = await run_load(fn, concurrency=concurrency, turns=turns, cap_seconds=cap)
        if settle is not None:
            await settle(len(load.results))
    finally:
        pg_s = pg.stop()
        peak = rss.stop() if rss else None
    server_s = cpu.tree_cpu_seconds(proc.pid) - server0
    mock_s = cpu.tree_cpu_seconds(mock.pid) - mock0 if mock and mock0 is not None else None
    client_s = cpu.self_cpu_seconds() - client0
    row = make_row(
        scenario,
        server,
        concurrency,
        load,
        cpu_s=server_s,
        pg_cpu_s=pg_s,
        client_cpu_s=client_s,
        mock_cpu_s=mock_s,
        peak_rss_kib=peak,
        pg_new_backends=pg.new_processes,
        feature=feature,
    )
    if not proc.alive():
        row.error_kinds["server_died"] = 1
    run.rows.append(row)
    kinds = f" {row.error_kinds}" if row.error_kinds else ""
    label = f"{scenario}+{feature}" if feature and feature != FEATURE_OFF else scenario
    log(
        f"{label:12} {server:13} c={concurrency:<4} ok={row.turns_ok:<4} err={row.errors:<3} "
        f"{row.turns_per_s} turns/s, ttft p50 {row.ttft_p50_ms} ms, cpu {row.cpu_ms_per_turn} ms/turn, "
        f"pg {row.pg_cpu_ms_per_turn} ms/turn{kinds}"
    )
    return row


TOOL_SCENARIOS = ("tool", "openai-tool")


def ar_target(run: Run, proc: Proc, scenario: str) -> ArTarget:
    agent = "scripted" if scenario == "scripted" else "openai" if scenario in OPENAI_SCENARIOS else "llm"
    return ArTarget(proc.url, run.token, run.agents[agent], expect_tool=scenario in TOOL_SCENARIOS)


def floor_target(proc: Proc, scenario: str) -> FloorTarget:
    return FloorTarget(proc.url, expect_tool=scenario in TOOL_SCENARIOS)


def ar_turns(run: Run, proc: Proc, scenario: str) -> TurnFactory:
    return ar_fn(ar_target(run, proc, scenario))


def floor_turns(proc: Proc, scenario: str) -> TurnFactory:
    return floor_fn(floor_target(proc, scenario))
