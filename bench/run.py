"""`make bench`: agent-runtime against the bare-proxy floor, in one run, on loopback (issue 6).

    python -m bench.run                      # full run: text, tool, scripted at 1/10/50 clients, 1,000 streams,
                                             # the features pass, then every target with PASS/MISS/n/a
    python -m bench.run --quick              # smoke: small counts
    python -m bench.run --idle 10000 --scenarios idle    # issue 25's 10,000 open streams
    python -m bench.run --db-stats           # also statements and commits per turn (bench/pgwire.py)
    python -m bench.run --concurrency 1,10 --turns 40 --skip-idle
    python -m bench.run --scripted-only --url http://127.0.0.1:8000 --token T --n 50   # issue 3: one JSON line
    python -m bench.run --scenarios openai-text,openai-tool   # only the `openai` provider vs. its floor

Starts the mock Anthropic server (`bench/mock_anthropic.py`: plain, `--tool-mode`, `--delay-ms 20`), the
floor (`bench/floor_server.py`) and `agent-runtime serve` (one uvicorn process, a fresh PostgreSQL
database migrated here and dropped at the end), drives each with N concurrent clients and prints the
table, the features pass (bench/features.py) and issue 25's targets. Results also go to
`bench/results/latest.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import functools
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx

from bench.agents import (
    BENCH_LIMITS,
    LLM_AGENT,
    OPENAI_AGENT,
    SCRIPTED_AGENT,
    TurnFactory,
    create_agent,
    mint_token,
    put_limits,
    warm_up,
)
from bench.db import BenchDatabase, admin_url_from_env, pool_settings, server_connections
from bench.dbstats import per_turn_text
from bench.features import FEATURE_NAMES, sink_counts
from bench.idle import run_idle, set_hold
from bench.log import log
from bench.measure import Run, ar_target, ar_turns, floor_target, floor_turns, measure
from bench.passes import count_db_work, features_pass
from bench.plan import build_parser, make_plan
from bench.procs import Proc, ProcSet, repo_root
from bench.report import AR, FLOOR, add_ratios, all_targets, feature_table, table, targets_text
from bench.scripted import scripted_only
from bench.servers import Phase, phases_for, start_phase, start_sink

LOGS = repo_root() / "bench" / "results" / "logs"


async def run_phase(run: Run, phase: Phase) -> None:
    if phase.ar is None or phase.floor is None or phase.mock is None:
        raise RuntimeError(f"phase {phase.name} was not started")
    plan = run.plan
    if not run.agents:
        run.token = mint_token()
        if run.tenant_limits:
            await put_limits(phase.ar.url, BENCH_LIMITS)
        run.agents["llm"] = await create_agent(phase.ar.url, run.token, "bench-llm", LLM_AGENT)
        run.agents["scripted"] = await create_agent(phase.ar.url, run.token, "bench-scripted", SCRIPTED_AGENT)
        run.agents["openai"] = await create_agent(phase.ar.url, run.token, "bench-openai", OPENAI_AGENT)
    for scenario in phase.scenarios:
        servers: list[tuple[str, Proc, TurnFactory]] = [(AR, phase.ar, ar_turns(run, phase.ar, scenario))]
        if scenario != "scripted":
            servers.insert(0, (FLOOR, phase.floor, floor_turns(phase.floor, scenario)))
        for server, _proc, fn in servers:
            if scenario == "idle":
                await warm_up(f"{scenario}/{server}", fn, 5, concurrency=5)
            else:
                await warm_up(f"{scenario}/{server}", fn, plan.warmup_turns, concurrency=max(plan.concurrency))
        if scenario == "idle":
            await idle_runs(run, phase, servers)
            continue
        for concurrency in plan.concurrency:
            for server, proc, fn in servers:
                await measure(
                    run,
                    scenario=scenario,
                    server=server,
                    proc=proc,
                    mock=phase.mock,
                    fn=fn,
                    concurrency=concurrency,
                    turns=plan.turns_for(concurrency),
                    cap=plan.cap_seconds,
                    sample_rss=True,
                )


async def idle_runs(run: Run, phase: Phase, servers: list[tuple[str, Proc, TurnFactory]]) -> None:
    """Issue 25's open streams: the mock holds every reply open, the drivers ramp the opens (bench/idle.py)."""
    assert phase.mock is not None
    plan = run.plan
    ramp = plan.idle_ramp
    await set_hold(phase.mock.url, ramp.hold)
    log(
        f"idle: {ramp.streams} streams at {ramp.rate:g}/s (at most {ramp.opening} opening), {ramp.drivers} driver "
        f"processes, each reply held {ramp.hold:.0f} s with pings, turn timeout {ramp.turn_timeout:.0f} s"
    )
    try:
        for server, proc, fn in servers:
            target = ar_target(run, proc, "idle") if server == AR else floor_target(proc, "idle")
            await measure(
                run,
                scenario="idle",
                server=server,
                proc=proc,
                mock=phase.mock,
                fn=fn,
                concurrency=plan.idle_streams,
                turns=plan.idle_streams,
                cap=plan.idle_timeout,
                sample_rss=True,
                load_fn=functools.partial(run_idle, target, ramp, plan.idle_timeout),
            )
    finally:
        await set_hold(phase.mock.url, 0.0)


def _check_environment() -> None:
    if not Path("/proc/self/stat").exists():
        raise SystemExit("bench: needs Linux /proc to measure CPU")


async def full_run(args: argparse.Namespace) -> int:
    _check_environment()
    plan = make_plan(args)
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    if main_task is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, main_task.cancel)
    work = Path(tempfile.mkdtemp(prefix="agent-runtime-bench-"))
    logs = LOGS
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True, exist_ok=True)
    db = BenchDatabase(args.pg_url or admin_url_from_env())
    procs = ProcSet(logs)
    shared = ProcSet(logs)
    run = Run(plan=plan, db=db, tenant_limits=args.tenant_limits)
    started = dt.datetime.now(dt.UTC)
    try:
        run.loadavg_at_start = os.getloadavg()
        log(f"load average at start: {' '.join(f'{x:.2f}' for x in run.loadavg_at_start)} on {os.cpu_count()} CPUs")
        limit, used = await db.headroom()
        run.pg_connections = {"max_connections": limit, "in_use_at_start": used}
        run.pool = pool_settings(args.db_pool, limit, used)
        if run.pool:
            log(
                f"PostgreSQL has {used}/{limit} connections in use by others, too few for agent-runtime's pool "
                f"({server_connections()} connections): running it with {run.pool}"
            )
        stale = await db.drop_stale()
        if stale:
            log(f"dropped databases of earlier runs that were killed: {', '.join(stale)}")
        await db.create()
        await db.migrate()
        log(f"database {db.name} created and migrated; server logs in {logs}")
        if plan.features:
            run.sink_url = await start_sink(shared)
        for phase in phases_for(plan):
            try:
                await start_phase(phase, procs, db.url, work, run.pool)
                await run_phase(run, phase)
                if plan.db_stats:
                    await count_db_work(run, phase, procs)
                if plan.features:
                    await features_pass(run, phase, procs)
            finally:
                procs.stop_all()
        if run.sink_url:
            run.sink_received = await sink_counts(run.sink_url)
    finally:
        procs.stop_all()
        shared.stop_all()
        with contextlib.suppress(Exception):
            await db.drop()
        shutil.rmtree(work, ignore_errors=True)
    add_ratios(run.rows)
    checks = all_targets(run.rows, idle_streams=plan.idle_streams, db_per_turn=run.db_per_turn, features=FEATURE_NAMES)
    print(report_text(run))
    print()
    print(targets_text(checks))
    write_json(args.json_out, run, checks, started)
    log(f"results written to {args.json_out}")
    return 0


def report_text(run: Run) -> str:
    """The scenario table, then the features pass and `--db-stats` when they ran."""
    parts = [table([r for r in run.rows if not r.feature])]
    feature_rows = [r for r in run.rows if r.feature]
    if feature_rows:
        received = ", ".join(f"{n} POST {path}" for path, n in sorted(run.sink_received.items())) or "nothing"
        parts.append(feature_table(feature_rows) + f"\nthe sink received {received}")
    for scenario, values in run.db_per_turn.items():
        title = f"database work per turn, {scenario} (1 client, {run.db_turns[scenario]} turns, bench/pgwire.py):"
        parts.append(per_turn_text(values, title=title))
    return "\n\n".join(parts)


def write_json(path: Path, run: Run, checks: list[Any], started: dt.datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "started_at": started.isoformat(),
        "host": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_at_start": run.loadavg_at_start,
            "loadavg_at_end": os.getloadavg(),
            "postgres_connections": run.pg_connections,
            "agent_runtime_pool_override": run.pool,
        },
        "plan": run.plan.__dict__,
        "rows": [r.as_dict() for r in run.rows],
        "db_per_turn": run.db_per_turn,
        "sink_received": run.sink_received,
        "targets": [t.as_dict() for t in checks],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------- entry


def _runner() -> asyncio.Runner:
    try:
        import uvloop
    except ImportError:
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


def run_to_the_end(name: str, coro: Coroutine[Any, Any, int]) -> int:
    """Run a bench's coroutine on its own loop; an interrupt (its processes are stopped by then) is 130."""
    try:
        with _runner() as runner:
            return runner.run(coro)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"{name}: interrupted; every process it started was stopped", file=sys.stderr)
        return 130


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    coro = scripted_only(args) if args.scripted_only else full_run(args)
    try:
        return run_to_the_end("bench", coro)
    except (RuntimeError, OSError, httpx.HTTPError) as exc:
        print(f"bench: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
