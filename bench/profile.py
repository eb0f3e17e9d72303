"""Profile agent-runtime under the bench load with py-spy, and print where the samples fall.

    make install                           # py-spy comes with the dev extras
    python -m bench.profile --scenario text --concurrency 10 --duration 20

Starts the same mock and agent-runtime as `bench.run` (fresh database, dropped at the end), warms up,
then records the server with `py-spy record --format speedscope` while the load runs, and prints the top
functions by own samples and by inclusive samples, and own samples per package.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.agents import LLM_AGENT, SCRIPTED_AGENT, create_agent, mint_token
from bench.db import BenchDatabase, admin_url_from_env, pool_settings
from bench.dbstats import per_turn, per_turn_text, settled_counters
from bench.load import ArTarget, ar_turn, run_load
from bench.log import log
from bench.procs import ProcSet
from bench.run import run_to_the_end
from bench.servers import Phase, start_phase

SCENARIO_MOCK_ARGS = {"text": [], "tool": ["--tool-mode"], "scripted": [], "idle": ["--delay-ms", "20"]}


def _py_spy() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


def _package(path: str) -> str:
    if "site-packages/" in path:
        rest = path.split("site-packages/", 1)[1]
        return rest.split("/", 1)[0].removesuffix(".py")
    if "/app/" in path:
        return "app/" + path.split("/app/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if path.startswith("<"):
        return path
    return "stdlib:" + Path(path).stem


def summarize(speedscope: dict[str, Any], *, top: int = 25) -> str:
    frames = speedscope["shared"]["frames"]
    own: Counter[int] = Counter()
    inclusive: Counter[int] = Counter()
    packages: Counter[str] = Counter()
    total = 0.0
    count = 0
    for profile in speedscope["profiles"]:
        for stack, weight in zip(profile["samples"], profile["weights"], strict=True):
            if not stack:
                continue
            total += weight
            count += 1
            own[stack[-1]] += weight
            packages[_package(frames[stack[-1]].get("file", "?"))] += weight
            for index in set(stack):
                inclusive[index] += weight
    if not total:
        return "no samples"

    def label(index: int) -> str:
        frame = frames[index]
        file = frame.get("file", "?")
        short = file.split("site-packages/", 1)[-1] if "site-packages/" in file else file.split("/work/main/")[-1]
        return f"{frame['name']} ({short}:{frame.get('line', '?')})"

    lines = [f"{count} samples, {total:.2f} s (non-idle threads)", "", "top functions by own samples:"]
    lines += [f"  {100 * w / total:5.1f}%  {label(i)}" for i, w in own.most_common(top)]
    lines += ["", "top functions by inclusive samples:"]
    lines += [f"  {100 * w / total:5.1f}%  {label(i)}" for i, w in inclusive.most_common(top)]
    lines += ["", "own samples by package:"]
    lines += [f"  {100 * w / total:5.1f}%  {name}" for name, w in packages.most_common(top)]
    return "\n".join(lines)


async def profile(args: argparse.Namespace) -> int:
    spy = _py_spy()
    if spy is None:
        print("bench.profile: py-spy not found; run `make install` (py-spy is a dev extra)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="agent-runtime-profile-"))
    db = BenchDatabase(args.pg_url or admin_url_from_env())
    procs = ProcSet(work)
    out = args.out or work / "profile.speedscope.json"
    spy_proc: subprocess.Popen[bytes] | None = None
    try:
        pool = pool_settings("auto", *(await db.headroom()))
        if pool:
            log(f"few free PostgreSQL connections: agent-runtime runs with {pool}")
        await db.create()
        await db.migrate()
        phase = Phase(args.scenario, SCENARIO_MOCK_ARGS[args.scenario], [args.scenario])
        await start_phase(phase, procs, db.url, work, pool)
        if phase.ar is None:
            raise RuntimeError("agent-runtime did not start")
        token = mint_token()
        config = SCRIPTED_AGENT if args.scenario == "scripted" else LLM_AGENT
        agent_id = await create_agent(phase.ar.url, token, "profile-agent", config)
        target = ArTarget(phase.ar.url, token, agent_id, expect_tool=args.scenario == "tool")

        def fn(client: Any) -> Any:
            return ar_turn(client, target)

        await run_load(fn, concurrency=5, turns=20, cap_seconds=60)
        stats = ""
        if args.db_stats:
            before = await settled_counters(db)
            counted = await run_load(fn, concurrency=args.concurrency, turns=100, cap_seconds=120)
            turns = len(counted.results)
            values = per_turn(before, await settled_counters(db), turns)
            stats = "\n" + per_turn_text(values, title=f"database work per turn ({turns} turns):")
        spy_proc = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(phase.ar.pid),
                "--duration",
                str(args.duration),
                "--rate",
                str(args.rate),
                "--format",
                "speedscope",
                "--output",
                str(out),
                *(["--native"] if args.native else ["--nonblocking"]),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        load = await run_load(fn, concurrency=args.concurrency, turns=100_000, cap_seconds=args.duration + 1)
        log(
            f"profiled load: {len(load.ok)} turns ok, {load.errors - load.timed_out} errors "
            f"({load.timed_out} turns in flight were cancelled at the end), "
            f"{len(load.ok) / max(load.wall_seconds, 1e-9):.1f} turns/s"
        )
        _, err = await asyncio.to_thread(spy_proc.communicate, None, args.duration + 60)
        if spy_proc.returncode != 0 or not Path(out).exists():
            print(f"py-spy failed: {err.decode(errors='replace')[-2000:]}", file=sys.stderr)
            return 1
        print(summarize(json.loads(Path(out).read_text()), top=args.top))
        if stats:
            print(stats)
        log(f"speedscope profile: {out} (open at https://www.speedscope.app)")
        return 0
    finally:
        if spy_proc is not None and spy_proc.poll() is None:
            spy_proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy_proc.wait(timeout=5)
        procs.stop_all()
        with contextlib.suppress(Exception):
            await db.drop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", choices=sorted(SCENARIO_MOCK_ARGS), default="text")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--duration", type=int, default=20, help="seconds to record (and to run the load)")
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None, help="where to keep the speedscope JSON")
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--native", action="store_true", help="include native frames (C extensions, the GC)")
    parser.add_argument(
        "--db-stats",
        action="store_true",
        help="also count transactions and rows per turn over 100 turns first (adds ~30 s)",
    )
    args = parser.parse_args(argv)
    return run_to_the_end("bench.profile", profile(args))


if __name__ == "__main__":
    sys.exit(main())
