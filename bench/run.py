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
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import cpu
from bench.agents import (
    BENCH_LIMITS,
    LLM_AGENT,
    OPENAI_AGENT,
    SCRIPTED_AGENT,
    SECRET,
    TOKENS_PER_REPLY,
    TurnFactory,
    ar_fn,
    create_agent,
    floor_fn,
    mint_token,
    put_limits,
    warm_up,
)
from bench.db import BenchDatabase, admin_url_from_env, pool_settings, server_connections
from bench.dbstats import per_turn, per_turn_text
from bench.features import FEATURE_CLIENTS, FEATURE_NAMES, FEATURE_SCENARIOS, FEATURES, Feature, sink_counts
from bench.load import ArTarget, FloorTarget, LoadResult, run_load
from bench.pgwire import CountingProxy
from bench.procs import LOOPBACK, Proc, ProcSet, free_port, repo_root
from bench.report import FEATURE_OFF, Row, add_ratios, all_targets, feature_table, make_row, table, targets_text
from bench.scripted import scripted_only

RESULTS = repo_root() / "bench" / "results" / "latest.json"
LOGS = repo_root() / "bench" / "results" / "logs"
SCENARIOS = ("text", "tool", "scripted", "idle", "openai-text", "openai-tool")
OPENAI_SCENARIOS = ("openai-text", "openai-tool")
"""The `openai` provider against an OpenAI-compatible mock, with its own floor on the `openai` SDK."""
AR = "agent-runtime"
FLOOR = "floor"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- config


@dataclass
class Plan:
    concurrency: list[int]
    turns: int | None
    scenarios: list[str]
    idle_streams: int
    idle_delay_ms: float
    cap_seconds: float
    idle_timeout: float
    warmup_turns: int
    quick: bool
    db_stats: bool = False
    features: list[str] = field(default_factory=list)
    """The features pass's features (bench/features.py), in order; empty: no features pass."""

    def turns_for(self, concurrency: int) -> int:
        return self.turns if self.turns is not None else max(100, 10 * concurrency)


def _int_list(value: str) -> list[int]:
    try:
        items = [int(x) for x in value.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,10,50, not {value!r}") from exc
    if not items or any(i < 1 or i > 2000 for i in items):
        raise argparse.ArgumentTypeError("concurrency levels must be between 1 and 2000")
    return items


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {value!r}")
    return number


def _pool_mode(value: str) -> str:
    if value in ("auto", "default") or (value.isdigit() and 1 <= int(value) <= 200):
        return value
    raise argparse.ArgumentTypeError("use auto, default or a pool size between 1 and 200")


def _features(value: str) -> list[str]:
    items = [x.strip() for x in value.split(",") if x.strip()]
    unknown = [x for x in items if x not in FEATURE_NAMES]
    if unknown or not items:
        raise argparse.ArgumentTypeError(f"features are {', '.join(FEATURE_NAMES)}; unknown: {unknown}")
    return items


def _scenarios(value: str) -> list[str]:
    items = [x.strip() for x in value.split(",") if x.strip()]
    unknown = [x for x in items if x not in SCENARIOS]
    if unknown or not items:
        raise argparse.ArgumentTypeError(f"scenarios are {', '.join(SCENARIOS)}; unknown: {unknown}")
    return items


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 and 5 clients, 10 turns, 100 streams")
    parser.add_argument("--concurrency", type=_int_list, default=None, help="client counts (default 1,10,50)")
    parser.add_argument("--turns", type=_positive, default=None, help="turns per run (default max(100, 10*clients))")
    parser.add_argument(
        "--scenarios",
        type=_scenarios,
        default=list(SCENARIOS),
        help="comma list of text,tool,scripted,idle,openai-text,openai-tool (default all)",
    )
    parser.add_argument("--skip-idle", action="store_true", help="leave out the idle-stream run")
    parser.add_argument(
        "--idle",
        "--idle-streams",
        dest="idle_streams",
        type=_positive,
        default=None,
        metavar="N",
        help="streams opened together in the idle run (default 1000, --quick 100; the target is set for 10000)",
    )
    parser.add_argument(
        "--features",
        type=_features,
        default=list(FEATURE_NAMES),
        help=f"the features pass: text and tool at {FEATURE_CLIENTS} clients with each of these on alone "
        f"(default all: {','.join(FEATURE_NAMES)})",
    )
    parser.add_argument("--skip-features", action="store_true", help="leave out the features pass")
    parser.add_argument(
        "--db-stats",
        action="store_true",
        help="count each scenario's statements and commits per turn, at one client, on one more agent-runtime "
        "connected through a counting proxy (bench/pgwire.py)",
    )
    parser.add_argument("--cap", type=float, default=120.0, help="wall-clock cap per measured run, seconds")
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        help="overall cap of the idle run, seconds (default 240, or one per 10 streams when that is more)",
    )
    parser.add_argument("--warmup", type=int, default=None, help="warm-up turns per server and scenario (default 20)")
    parser.add_argument(
        "--pg-url",
        default=None,
        help="admin URL of the PostgreSQL server (default $BENCH_PG_URL, $TEST_DATABASE_URL, "
        "or postgresql://postgres@127.0.0.1:5432/postgres)",
    )
    parser.add_argument(
        "--db-pool",
        type=_pool_mode,
        default="auto",
        help="agent-runtime's turn pool: default (its own settings), N (DATABASE_POOL_SIZE=N), or auto: the default "
        "unless the PostgreSQL server has too few free connections (default auto)",
    )
    parser.add_argument(
        "--tenant-limits",
        action="store_true",
        help="give the bench tenant a token quota and a concurrent-turn ceiling high enough never to refuse, "
        "so every turn pays for the admission checks and every model call reserves and settles",
    )
    parser.add_argument("--json-out", type=Path, default=RESULTS, help="where to write the results JSON")
    scripted = parser.add_argument_group("scripted-only (issue 3): drive an already running server")
    scripted.add_argument("--scripted-only", action="store_true")
    scripted.add_argument("--url", default="http://127.0.0.1:8000")
    scripted.add_argument("--token", default=os.environ.get("AGENT_RUNTIME_TOKEN"))
    scripted.add_argument("--n", type=_positive, default=50, help="concurrent scripted turns")
    scripted.add_argument("--agent-id", default=None, help="a scripted agent to use (default: create one)")
    return parser


def make_plan(args: argparse.Namespace) -> Plan:
    scenarios = [s for s in args.scenarios if not (args.skip_idle and s == "idle")]
    idle_streams = args.idle_streams or 1000
    features = [] if args.skip_features or not set(FEATURE_SCENARIOS) & set(scenarios) else args.features
    if args.quick:
        return Plan(
            concurrency=args.concurrency or [1, 5],
            turns=args.turns or 10,
            scenarios=scenarios,
            idle_streams=args.idle_streams or 100,
            idle_delay_ms=20.0,
            cap_seconds=min(args.cap, 60.0),
            idle_timeout=args.idle_timeout or 90.0,
            warmup_turns=args.warmup if args.warmup is not None else 5,
            quick=True,
            db_stats=args.db_stats,
            features=features,
        )
    return Plan(
        concurrency=args.concurrency or [1, 10, 50],
        turns=args.turns,
        scenarios=scenarios,
        idle_streams=idle_streams,
        idle_delay_ms=20.0,
        cap_seconds=args.cap,
        idle_timeout=args.idle_timeout or max(240.0, idle_streams / 10),
        warmup_turns=args.warmup if args.warmup is not None else 20,
        quick=False,
        db_stats=args.db_stats,
        features=features,
    )


# ---------------------------------------------------------------------------------------------- servers


def _python() -> str:
    return sys.executable


def _ar_argv(port: int) -> list[str]:
    """`python -m app.cli serve`, run in the repository (procs.py): the checkout's own `app` is measured,
    not whichever checkout the virtualenv's `agent-runtime` script was installed from."""
    return [_python(), "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]


def _ar_env(db_url: str, mock_url: str, data_dir: Path, pool: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for key in (
        "AUTH_JWKS_URL",
        "AUTH_ISSUER",
        "AUTH_AUDIENCE",
        "CONTEXT_ENGINE_URL",
        "MCP_GATEWAY_URL",
        "SIGNING_KEY_FILE",
        "CORS_ORIGINS",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ):
        env.pop(key, None)
    env.update(
        DATABASE_URL=db_url,
        AUTH_JWT_SECRET=SECRET,
        ANTHROPIC_BASE_URL=mock_url,
        ANTHROPIC_API_KEY="x",
        OPENAI_BASE_URL=f"{mock_url}/v1",
        OPENAI_API_KEY="x",
        DATA_DIR=str(data_dir),
        WEBHOOK_ALLOWED_HOSTS=LOOPBACK,
    )
    env.update(pool or {})
    return env


@dataclass
class Phase:
    """One mock flavour with a floor and an agent-runtime pointed at it."""

    name: str
    mock_args: list[str]
    scenarios: list[str]
    mock_module: str = "bench.mock_anthropic"
    floor_module: str = "bench.floor_server"
    floor_mock_suffix: str = ""
    """What the floor's SDK wants after the mock's address (the OpenAI SDK's base URL ends in /v1)."""
    mock: Proc | None = None
    floor: Proc | None = None
    ar: Proc | None = None
    ar_env: dict[str, str] = field(default_factory=dict)
    """The environment `ar` was started with; further servers of the phase start from it."""


async def start_phase(
    phase: Phase, procs: ProcSet, db_url: str, work: Path, pool: dict[str, str] | None = None
) -> None:
    mock_port, floor_port, ar_port = free_port(), free_port(), free_port()
    phase.mock = procs.start(
        f"mock-{phase.name}",
        [
            _python(),
            "-m",
            phase.mock_module,
            "--port",
            str(mock_port),
            "--tokens",
            str(TOKENS_PER_REPLY),
            *phase.mock_args,
        ],
        port=mock_port,
    )
    await asyncio.to_thread(phase.mock.wait_healthy, "/health", timeout=30)
    phase.floor = procs.start(
        f"floor-{phase.name}",
        [
            _python(),
            "-m",
            phase.floor_module,
            "--port",
            str(floor_port),
            "--mock",
            phase.mock.url + phase.floor_mock_suffix,
        ],
        port=floor_port,
    )
    data_dir = work / f"data-{phase.name}"
    data_dir.mkdir(parents=True, exist_ok=True)
    phase.ar_env = _ar_env(db_url, phase.mock.url, data_dir, pool)
    phase.ar = procs.start(f"agent-runtime-{phase.name}", _ar_argv(ar_port), port=ar_port, env=phase.ar_env)
    await asyncio.to_thread(phase.floor.wait_healthy, "/health", timeout=60)
    await asyncio.to_thread(phase.ar.wait_healthy, "/readyz", timeout=90)
    log(
        f"phase {phase.name}: mock pid {phase.mock.pid}, floor pid {phase.floor.pid}, "
        f"agent-runtime pid {phase.ar.pid} on port {ar_port}"
    )


async def start_more_ar(phase: Phase, procs: ProcSet, label: str, env: dict[str, str]) -> Proc:
    """One more agent-runtime of the phase (same database, mock and data folder), with `env` on top."""
    port = free_port()
    proc = procs.start(f"agent-runtime-{phase.name}-{label}", _ar_argv(port), port=port, env={**phase.ar_env, **env})
    await asyncio.to_thread(proc.wait_healthy, "/readyz", timeout=90)
    log(f"phase {phase.name}: agent-runtime ({label}) pid {proc.pid} on port {port}")
    return proc


# ---------------------------------------------------------------------------------------------- measuring


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
) -> Row:
    """One measured run; `settle(turns)`, when given, runs after the load and inside the measured window."""
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
        load: LoadResult = await run_load(fn, concurrency=concurrency, turns=turns, cap_seconds=cap)
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
        servers: list[tuple[str, Proc, TurnFactory]] = [(AR, phase.ar, _ar_turns(run, phase.ar, scenario))]
        if scenario != "scripted":
            servers.insert(0, (FLOOR, phase.floor, _floor_turns(phase.floor, scenario)))
        for server, _proc, fn in servers:
            if scenario == "idle":
                await warm_up(f"{scenario}/{server}", fn, 5, concurrency=5)
            else:
                await warm_up(f"{scenario}/{server}", fn, plan.warmup_turns, concurrency=max(plan.concurrency))
        if scenario == "idle":
            for server, proc, fn in servers:
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
                )
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


TOOL_SCENARIOS = ("tool", "openai-tool")
EXTRA_SERVER_POOL = {"DATABASE_POOL_SIZE": str(FEATURE_CLIENTS + 2)}
"""The turn pool of the phase's further servers: enough for their load, not another full pool on a
PostgreSQL whose connections the phase's own server (and other people) already hold."""


def _ar_turns(run: Run, proc: Proc, scenario: str) -> TurnFactory:
    agent = "scripted" if scenario == "scripted" else "openai" if scenario in OPENAI_SCENARIOS else "llm"
    return ar_fn(ArTarget(proc.url, run.token, run.agents[agent], expect_tool=scenario in TOOL_SCENARIOS))


def _floor_turns(proc: Proc, scenario: str) -> TurnFactory:
    return floor_fn(FloorTarget(proc.url, expect_tool=scenario in TOOL_SCENARIOS))


async def count_db_work(run: Run, phase: Phase, procs: ProcSet) -> None:
    """`--db-stats`: each scenario's statements and commits per turn, at one client, on one more server
    whose database connections go through the counting proxy (its background polls count too: a few a
    second, well under 0.1 per turn at the rate one client runs)."""
    scenarios = [s for s in phase.scenarios if s != "idle"]
    if not scenarios:
        return
    proxy = CountingProxy(*run.db.address)
    port = await proxy.start()
    try:
        env = {**EXTRA_SERVER_POOL, "DATABASE_URL": run.db.url_via(LOOPBACK, port)}
        proc = await start_more_ar(phase, procs, "counted", env)
        try:
            for scenario in scenarios:
                fn = _ar_turns(run, proc, scenario)
                await warm_up(f"{scenario}/counted", fn, 5, concurrency=1)
                before = proxy.counts.snapshot()
                turns = run.plan.turns_for(1)
                load = await run_load(fn, concurrency=1, turns=turns, cap_seconds=run.plan.cap_seconds)
                run.db_per_turn[scenario] = per_turn(before, proxy.counts.snapshot(), len(load.ok))
                run.db_turns[scenario] = len(load.ok)
                log(f"{scenario:12} db work per turn over {len(load.ok)} turns: {run.db_per_turn[scenario]}")
        finally:
            procs.stop(proc)
    finally:
        await proxy.stop()


async def features_pass(run: Run, phase: Phase, procs: ProcSet) -> None:
    """Text and tool at FEATURE_CLIENTS clients: the floor and agent-runtime with every feature off,
    then agent-runtime with each feature of the plan on alone (bench/features.py)."""
    if phase.ar is None or phase.floor is None:
        raise RuntimeError(f"phase {phase.name} was not started")
    wanted = [f for f in FEATURES if f.name in run.plan.features]
    for scenario in (s for s in phase.scenarios if s in FEATURE_SCENARIOS):
        off: list[tuple[str, Proc, TurnFactory]] = [
            (FLOOR, phase.floor, _floor_turns(phase.floor, scenario)),
            (AR, phase.ar, _ar_turns(run, phase.ar, scenario)),
        ]
        for server, _proc, fn in off:
            await warm_up(f"{scenario}/{server}", fn, run.plan.warmup_turns, concurrency=FEATURE_CLIENTS)
        for server, proc, fn in off:
            await _measure_features_run(run, scenario, server, proc, phase, fn, FEATURE_OFF)
        for feature in wanted:
            await _with_feature(run, phase, procs, scenario, feature)


async def _with_feature(run: Run, phase: Phase, procs: ProcSet, scenario: str, feature: Feature) -> None:
    if phase.ar is None:
        raise RuntimeError(f"phase {phase.name} was not started")
    env = feature.env(run.sink_url)
    proc = await start_more_ar(phase, procs, feature.name, {**EXTRA_SERVER_POOL, **env}) if env else phase.ar
    try:
        fn = _ar_turns(run, proc, scenario)
        if env:
            await warm_up(f"{scenario}/{feature.name}", fn, run.plan.warmup_turns, concurrency=FEATURE_CLIENTS)
        switched = await feature.switch_on(proc.url, run.sink_url)
        try:
            await _measure_features_run(run, scenario, AR, proc, phase, fn, feature.name, switched.settle)
        finally:
            await switched.off()
    finally:
        if env:
            procs.stop(proc)


async def _measure_features_run(
    run: Run,
    scenario: str,
    server: str,
    proc: Proc,
    phase: Phase,
    fn: TurnFactory,
    feature: str,
    settle: Callable[[int], Awaitable[None]] | None = None,
) -> None:
    await measure(
        run,
        scenario=scenario,
        server=server,
        proc=proc,
        mock=phase.mock,
        fn=fn,
        concurrency=FEATURE_CLIENTS,
        turns=run.plan.turns_for(FEATURE_CLIENTS),
        cap=run.plan.cap_seconds,
        feature=feature,
        settle=settle,
    )


def phases_for(plan: Plan) -> list[Phase]:
    wanted = plan.scenarios
    phases = [
        Phase("text", [], [s for s in ("text", "scripted") if s in wanted]),
        Phase("tool", ["--tool-mode"], ["tool"] if "tool" in wanted else []),
        Phase("idle", ["--delay-ms", f"{plan.idle_delay_ms:g}"], ["idle"] if "idle" in wanted else []),
        *(
            Phase(name, ["--tool-mode"] if name == "openai-tool" else [], [name], **_OPENAI_PHASE)
            for name in OPENAI_SCENARIOS
            if name in wanted
        ),
    ]
    return [p for p in phases if p.scenarios]


_OPENAI_PHASE: dict[str, Any] = {
    "mock_module": "bench.mock_openai",
    "floor_module": "bench.floor_openai",
    "floor_mock_suffix": "/v1",
}


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


async def start_sink(procs: ProcSet) -> str:
    """bench/sink.py for the whole run: the features pass's webhook and OTLP receiver."""
    port = free_port()
    sink = procs.start("sink", [_python(), "-m", "bench.sink", "--port", str(port)], port=port)
    await asyncio.to_thread(sink.wait_healthy, "/health", timeout=30)
    return sink.url


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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    coro = scripted_only(args) if args.scripted_only else full_run(args)
    try:
        with _runner() as runner:
            return runner.run(coro)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("bench: interrupted; every process it started was stopped", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, httpx.HTTPError) as exc:
        print(f"bench: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
