"""The bench's command line and what it asks for: scenarios, client counts, sizes and passes."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.features import FEATURE_CLIENTS, FEATURE_NAMES, FEATURE_SCENARIOS
from bench.idle import STREAMS_PER_CLIENT, IdleRamp
from bench.procs import repo_root

SCENARIOS = ("text", "tool", "scripted", "idle", "openai-text", "openai-tool")
RESULTS = repo_root() / "bench" / "results" / "latest.json"


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
    idle_rate: float = 100.0
    idle_opening: int = 100
    idle_clients: int = 0
    idle_hold: float = 0.0

    @property
    def idle_ramp(self) -> IdleRamp:
        return IdleRamp(self.idle_streams, self.idle_rate, self.idle_opening, self.idle_clients, self.idle_hold)

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
        "--idle-rate", type=float, default=100.0, help="idle run: streams opened per second (default 100)"
    )
    parser.add_argument(
        "--idle-opening",
        type=_positive,
        default=100,
        help="idle run: at most this many streams between their request and first text event (default 100)",
    )
    parser.add_argument(
        "--idle-clients",
        type=_positive,
        default=None,
        help=f"idle run: driver processes (default enough that each holds at most {STREAMS_PER_CLIENT:,} streams)",
    )
    parser.add_argument(
        "--idle-hold",
        type=float,
        default=None,
        help="idle run: seconds the mock holds each reply open (default: the ramp's time + 20)",
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
        help="overall cap of the idle run per server, seconds (default: ramp + hold + 120)",
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
    plan = _make_plan(args)
    plan.idle_rate = args.idle_rate
    plan.idle_opening = args.idle_opening
    plan.idle_clients = args.idle_clients or 0
    plan.idle_hold = args.idle_hold or 0.0
    ramp = plan.idle_ramp
    plan.idle_timeout = args.idle_timeout or ramp.ramp_seconds + ramp.hold + 120.0
    return plan


def _make_plan(args: argparse.Namespace) -> Plan:
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
