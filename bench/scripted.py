"""Issue 3's bench: N concurrent scripted turns against an already running server, one JSON line."""

from __future__ import annotations

import argparse
import json
import sys

from bench import cpu
from bench.agents import SCRIPTED_AGENT, ar_fn, create_agent, warm_up
from bench.load import ArTarget, run_load
from bench.report import percentile


async def scripted_only(args: argparse.Namespace) -> int:
    """Issue 3: N concurrent scripted turns against a running server; one JSON line on stdout."""
    if not args.token:
        print("bench: --token (or AGENT_RUNTIME_TOKEN) is required", file=sys.stderr)
        return 2
    url = args.url.rstrip("/")
    agent_id = args.agent_id or await create_agent(url, args.token, "bench-scripted", SCRIPTED_AGENT)
    fn = ar_fn(ArTarget(url, args.token, agent_id))
    await warm_up("scripted", fn, min(args.n, 5))
    turns = args.turns or args.n
    client0 = cpu.self_cpu_seconds()
    load = await run_load(fn, concurrency=args.n, turns=turns, cap_seconds=args.cap)
    ok = load.ok

    def ms(values: list[float], q: float) -> float | None:
        value = percentile(values, q)
        return None if value is None else round(value * 1000, 2)

    ttfe = [r.ttfe for r in ok if r.ttfe is not None]
    ttft = [r.ttft for r in ok if r.ttft is not None]
    latency = [r.latency for r in ok if r.latency is not None]
    line = {
        "concurrency": args.n,
        "turns": len(ok),
        "errors": load.errors + load.not_started,
        "turns_per_s": round(len(ok) / load.wall_seconds, 2) if load.wall_seconds else None,
        "ttfe_p50_ms": ms(ttfe, 50),
        "ttfe_p99_ms": ms(ttfe, 99),
        "ttft_p50_ms": ms(ttft, 50),
        "ttft_p99_ms": ms(ttft, 99),
        "latency_p50_ms": ms(latency, 50),
        "latency_p99_ms": ms(latency, 99),
        "wall_s": round(load.wall_seconds, 3),
        "client_cpu_s": round(cpu.self_cpu_seconds() - client0, 3),
        "error_kinds": load.error_kinds(),
    }
    print(json.dumps(line))
    return 0 if not line["errors"] else 1
