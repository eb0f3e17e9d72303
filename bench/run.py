"""`make bench`: agent-runtime against the bare-proxy floor, in one run, on loopback (issue 6).

    python -m bench.run                      # full run: text, tool, scripted at 1/10/50 clients + 1,000 streams
    python -m bench.run --quick              # smoke: small counts
    python -m bench.run --concurrency 1,10 --turns 40 --skip-idle
    python -m bench.run --scripted-only --url http://127.0.0.1:8000 --token T --n 50   # issue 3: one JSON line
    python -m bench.run --scenarios openai-text,openai-tool   # only the `openai` provider vs. its floor

Starts the mock Anthropic server (`bench/mock_anthropic.py`: plain, `--tool-mode`, `--delay-ms 20`), the
floor (`bench/floor_server.py`) and `agent-runtime serve` (one uvicorn process, a fresh PostgreSQL
database migrated here and dropped at the end), drives each with N concurrent clients and prints one
table plus the issue-6 targets. Results also go to `bench/results/latest.json`.
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
from bench.load import ArTarget, FloorTarget, LoadResult, run_load
from bench.procs import Proc, ProcSet, free_port, repo_root
from bench.report import Row, add_ratios, make_row, table, targets, targets_text
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
        "--idle-streams", type=_positive, default=None, help="open streams in the idle run (default 1000)"
    )
    parser.add_argument("--cap", type=float, default=120.0, help="wall-clock cap per measured run, seconds")
    parser.add_argument("--idle-timeout", type=float, default=240.0, help="overall cap of the idle run, seconds")
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
    if args.quick:
        return Plan(
            concurrency=args.concurrency or [1, 5],
            turns=args.turns or 10,
            scenarios=scenarios,
            idle_streams=args.idle_streams or 100,
            idle_delay_ms=20.0,
            cap_seconds=min(args.cap, 60.0),
            idle_timeout=min(args.idle_timeout, 90.0),
            warmup_turns=args.warmup if args.warmup is not None else 5,
            quick=True,
        )
    return Plan(
        concurrency=args.concurrency or [1, 10, 50],
        turns=args.turns,
        scenarios=scenarios,
        idle_streams=args.idle_streams or 1000,
        idle_delay_ms=20.0,
        cap_seconds=args.cap,
        idle_timeout=args.idle_timeout,
        warmup_turns=args.warmup if args.warmup is not None else 20,
        quick=False,
    )


# ---------------------------------------------------------------------------------------------- servers


def _python() -> str:
    return sys.executable


def _ar_argv(port: int) -> list[str]:
    script = Path(sys.executable).parent / "agent-runtime"
    head = [str(script)] if script.exists() else [_python(), "-m", "app.cli"]
    return [*head, "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]


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
    phase.ar = procs.start(
        f"agent-runtime-{phase.name}",
        _ar_argv(ar_port),
        port=ar_port,
        env=_ar_env(db_url, phase.mock.url, data_dir, pool),
    )
    await asyncio.to_thread(phase.floor.wait_healthy, "/health", timeout=60)
    await asyncio.to_thread(phase.ar.wait_healthy, "/readyz", timeout=90)
    log(
        f"phase {phase.name}: mock pid {phase.mock.pid}, floor pid {phase.floor.pid}, "
        f"agent-runtime pid {phase.ar.pid} on port {ar_port}"
    )


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
) -> Row:
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
    )
    if not proc.alive():
        row.error_kinds["server_died"] = 1
    run.rows.append(row)
    kinds = f" {row.error_kinds}" if row.error_kinds else ""
    log(
        f"{scenario:8} {server:13} c={concurrency:<4} ok={row.turns_ok:<4} err={row.errors:<3} "
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
        tool = scenario in ("tool", "openai-tool")
        agent = "scripted" if scenario == "scripted" else "openai" if scenario in OPENAI_SCENARIOS else "llm"
        ar_target = ArTarget(phase.ar.url, run.token, run.agents[agent], expect_tool=tool)
        servers: list[tuple[str, Proc, TurnFactory]] = [(AR, phase.ar, ar_fn(ar_target))]
        if scenario != "scripted":
            floor_target = FloorTarget(phase.floor.url, expect_tool=tool)
            servers.insert(0, (FLOOR, phase.floor, floor_fn(floor_target)))
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
        for phase in phases_for(plan):
            try:
                await start_phase(phase, procs, db.url, work, run.pool)
                await run_phase(run, phase)
            finally:
                procs.stop_all()
    finally:
        procs.stop_all()
        with contextlib.suppress(Exception):
            await db.drop()
        shutil.rmtree(work, ignore_errors=True)
    add_ratios(run.rows)
    checks = targets(run.rows, idle_streams=plan.idle_streams)
    print(table(run.rows))
    print()
    print(targets_text(checks))
    write_json(args.json_out, run, checks, started)
    log(f"results written to {args.json_out}")
    return 0


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
