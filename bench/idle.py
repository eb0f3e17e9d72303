"""The idle run's driver (issue 25: 10,000 streams open at once in one server process).

N turns are opened at `rate` a second, at most `opening` of them between their request and their
first text event, by K driver processes (each holds at most ~2,500 sockets and its own event loop, so
no one client process's file limit or CPU is what is measured). The mock (`POST /behaviour`) holds
every reply open after its first word, with SSE pings, for `hold_seconds` — long enough that the
first stream is still open when the last one opens — and then finishes it. Each turn's result carries
perf_counter times (CLOCK_MONOTONIC, the same clock in every process), so `peak_open` counts the
streams open at the same moment across all drivers.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import time
from collections.abc import Awaitable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import httpx

from bench.load import ArTarget, FloorTarget, LoadResult, TurnResult, ar_turn, floor_turn, guarded, new_client
from bench.procs import raise_open_files

STREAMS_PER_CLIENT = 2500
STREAMS_PER_POOL = 100
"""Streams sharing one httpx client (a pool much larger than this gets slow in the client too)."""
PING_SECONDS = 10.0
HOLD_MARGIN_SECONDS = 20.0
"""How long all N streams are open together, at the least (hold = ramp time + this)."""
START_DELAY_SECONDS = 5.0
"""Time for the driver processes to start before the first stream opens."""

Target = ArTarget | FloorTarget


@dataclass(frozen=True, slots=True)
class IdleRamp:
    streams: int
    rate: float = 100.0
    opening: int = 100
    clients: int = 0
    """Driver processes; 0: enough that each holds at most STREAMS_PER_CLIENT."""
    hold_seconds: float = 0.0
    """How long the mock holds each reply; 0: the ramp's time plus HOLD_MARGIN_SECONDS."""

    @property
    def ramp_seconds(self) -> float:
        return self.streams / self.rate

    @property
    def drivers(self) -> int:
        return min(self.streams, self.clients or max(1, math.ceil(self.streams / STREAMS_PER_CLIENT)))

    @property
    def hold(self) -> float:
        return self.hold_seconds or self.ramp_seconds + HOLD_MARGIN_SECONDS

    @property
    def turn_timeout(self) -> float:
        """A turn may wait the whole ramp for its open, then the hold, then finish."""
        return self.ramp_seconds + self.hold + 60.0


async def set_hold(mock_url: str, hold_seconds: float, ping_seconds: float = PING_SECONDS) -> None:
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        resp = await client.post(
            f"{mock_url}/behaviour", json={"hold_seconds": hold_seconds, "ping_seconds": ping_seconds}
        )
        resp.raise_for_status()


@dataclass(slots=True)
class DriverOutcome:
    results: list[TurnResult]
    timed_out: int
    not_started: int


async def _ramp(target: Target, count: int, rate: float, opening: int, start_at: float, timeout: float,
                cap: float) -> DriverOutcome:  # fmt: skip
    gate = asyncio.Semaphore(opening)
    results: list[TurnResult] = []
    clients = [new_client(STREAMS_PER_POOL, timeout) for _ in range(math.ceil(count / STREAMS_PER_POOL))]
    started = 0

    async def one(client: httpx.AsyncClient) -> None:
        released = False

        def opened() -> None:
            nonlocal released
            if not released:
                released = True
                gate.release()

        def fn(c: httpx.AsyncClient) -> Awaitable[TurnResult]:
            if isinstance(target, ArTarget):
                return ar_turn(c, target, opened)
            return floor_turn(c, target, opened)

        try:
            results.append(await guarded(fn, client, timeout))
        finally:
            opened()

    tasks: list[asyncio.Task[None]] = []

    async def launch() -> None:
        nonlocal started
        for i in range(count):
            delay = start_at + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await gate.acquire()
            tasks.append(asyncio.create_task(one(clients[i // STREAMS_PER_POOL])))
            started += 1
        await asyncio.gather(*tasks)

    try:
        async with asyncio.timeout(cap):
            await launch()
    except TimeoutError:
        pass  # the streams still running at the cap were cancelled with `launch`: counted below
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
    return DriverOutcome(results, started - len(results), count - started)


def _drive(target: Target, count: int, rate: float, opening: int, start_at: float, timeout: float,
           cap: float) -> DriverOutcome:  # fmt: skip
    """One driver process's share of the streams, on its own (uv)loop."""
    raise_open_files()
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    with runner:
        return runner.run(_ramp(target, count, rate, opening, start_at, timeout, cap))


async def run_idle(target: Target, ramp: IdleRamp, cap_seconds: float) -> LoadResult:
    """Open `ramp.streams` turns of `target` over `ramp.drivers` processes; the drivers stop at the cap."""
    k = ramp.drivers
    shares = [ramp.streams // k + (1 if i < ramp.streams % k else 0) for i in range(k)]
    rate, opening = ramp.rate / k, max(1, math.ceil(ramp.opening / k))
    start_at = time.perf_counter() + START_DELAY_SECONDS
    loop = asyncio.get_running_loop()
    out = LoadResult()
    with ProcessPoolExecutor(max_workers=k, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            # Driver i opens its streams at start + i/rate, +k/rate, …: together, one each 1/rate.
            loop.run_in_executor(
                pool, _drive, target, n, rate, opening, start_at + i / ramp.rate, ramp.turn_timeout, cap_seconds
            )
            for i, n in enumerate(shares)
        ]
        outcomes = await asyncio.gather(*futures)
    for outcome in outcomes:
        out.results += outcome.results
        out.timed_out += outcome.timed_out
        out.not_started += outcome.not_started
    ends = [r.closed_at for r in out.results if r.closed_at is not None]
    out.wall_seconds = (max(ends) if ends else time.perf_counter()) - start_at
    return out
