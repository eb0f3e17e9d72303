"""The passes after a phase's scenarios: `--db-stats` (bench/pgwire.py) and the features pass (bench/features.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from bench.agents import TurnFactory, warm_up
from bench.dbstats import per_second, per_turn
from bench.features import FEATURE_CLIENTS, FEATURE_SCENARIOS, FEATURES, Feature
from bench.load import run_load
from bench.log import log
from bench.measure import Run, ar_turns, floor_turns, measure
from bench.pgwire import CountingProxy
from bench.procs import LOOPBACK, Proc, ProcSet
from bench.report import AR, FEATURE_OFF, FLOOR
from bench.servers import Phase, start_more_ar

EXTRA_SERVER_POOL = {"DATABASE_POOL_SIZE": str(FEATURE_CLIENTS + 2)}
"""The turn pool of the phase's further servers: enough for their load, not another full pool on a
PostgreSQL whose connections the phase's own server (and other people) already hold."""
BACKGROUND_SECONDS = 3.0
"""How long the counted server is watched idle first: its own polls (lease heartbeat, workers) at that
rate are taken off what the load counted."""


async def count_db_work(run: Run, phase: Phase, procs: ProcSet) -> None:
    """`--db-stats`: each scenario's statements and commits per turn, at one client, on one more server
    whose database connections go through the counting proxy; its background polls, counted while it
    idles just before, are taken off at their rate."""
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
                fn = ar_turns(run, proc, scenario)
                await warm_up(f"{scenario}/counted", fn, 5, concurrency=1)
                quiet = proxy.counts.snapshot()
                await asyncio.sleep(BACKGROUND_SECONDS)
                before, started = proxy.counts.snapshot(), time.perf_counter()
                background = per_second(quiet, before, BACKGROUND_SECONDS)
                turns = run.plan.turns_for(1)
                load = await run_load(fn, concurrency=1, turns=turns, cap_seconds=run.plan.cap_seconds)
                spent = time.perf_counter() - started
                after = proxy.counts.snapshot()
                run.db_per_turn[scenario] = per_turn(before, after, len(load.ok), background=background, seconds=spent)
                run.db_turns[scenario] = len(load.ok)
                log(f"{scenario:12} db work per turn over {len(load.ok)} turns: {run.db_per_turn[scenario]}")
        finally:
            await asyncio.to_thread(procs.stop, proc)  # the proxy runs on this loop while it drains
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
            (FLOOR, phase.floor, floor_turns(phase.floor, scenario)),
            (AR, phase.ar, ar_turns(run, phase.ar, scenario)),
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
        fn = ar_turns(run, proc, scenario)
        if env:
            await warm_up(f"{scenario}/{feature.name}", fn, run.plan.warmup_turns, concurrency=FEATURE_CLIENTS)
        switched = await feature.switch_on(proc.url, run.sink_url)
        try:
            await _measure_features_run(run, scenario, AR, proc, phase, fn, feature.name, switched.settle)
        finally:
            await switched.off()
    finally:
        if env:
            await asyncio.to_thread(procs.stop, proc)


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
