"""The async load driver: N concurrent clients, each running turns over HTTP + SSE until the work is done."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import orjson

TURN_TIMEOUT_SECONDS = 60.0
TEXT_EVENTS = {"agent-runtime": "message.delta", "floor": "token"}


@dataclass(slots=True)
class TurnResult:
    ok: bool
    error: str | None = None
    ttfe: float | None = None  # first SSE event of the turn, from the turn request's start
    ttft: float | None = None  # first text event, from the turn request's start
    latency: float | None = None  # whole turn, including session creation
    tool_calls: int = 0
    events: int = 0
    opened_at: float | None = None  # perf_counter when the stream's headers arrived
    first_text_at: float | None = None  # perf_counter when its first text event arrived
    closed_at: float | None = None  # perf_counter when its last event was read


OnOpen = Callable[[], None]
"""Called when a stream's first text event arrives: from then on it is open end to end."""


def peak_open(results: list[TurnResult]) -> int:
    """The most streams that were open at the same moment: a stream is open from its first text event
    (its headers when it sent no text) to its end. Times are perf_counter, CLOCK_MONOTONIC on Linux, so
    results of several driver processes compare."""
    marks = []
    for r in results:
        opened = r.first_text_at if r.first_text_at is not None else r.opened_at
        if opened is not None and r.closed_at is not None:
            marks += [(opened, 1), (r.closed_at, -1)]
    peak = current = 0
    for _, step in sorted(marks):
        current += step
        peak = max(peak, current)
    return peak


@dataclass(slots=True)
class LoadResult:
    results: list[TurnResult] = field(default_factory=list)
    wall_seconds: float = 0.0
    timed_out: int = 0
    not_started: int = 0

    @property
    def ok(self) -> list[TurnResult]:
        return [r for r in self.results if r.ok]

    @property
    def errors(self) -> int:
        return len(self.results) - len(self.ok) + self.timed_out

    def error_kinds(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for r in self.results:
            if not r.ok:
                key = r.error or "unknown"
                kinds[key] = kinds.get(key, 0) + 1
        if self.timed_out:
            kinds["scenario_time_cap"] = self.timed_out
        return kinds


TurnFn = Callable[[httpx.AsyncClient], Awaitable[TurnResult]]


@dataclass(frozen=True, slots=True)
class ArTarget:
    """An agent-runtime server, the agent to talk to, and what a good turn looks like."""

    url: str
    token: str
    agent_id: str
    expect_tool: bool = False
    message: str = "Say hello in fifty words."

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass(frozen=True, slots=True)
class FloorTarget:
    url: str
    expect_tool: bool = False
    message: str = "Say hello in fifty words."


async def ar_turn(client: httpx.AsyncClient, target: ArTarget, on_open: OnOpen | None = None) -> TurnResult:
    """POST /sessions, then POST /sessions/{id}/turns read to `turn.ended` (completed = ok)."""
    started = time.perf_counter()
    headers = target.headers()
    resp = await client.post(f"{target.url}/sessions", json={"agent_id": target.agent_id}, headers=headers)
    if resp.status_code != 201:
        return TurnResult(ok=False, error=f"sessions_http_{resp.status_code}")
    session_id = resp.json()["id"]
    result = TurnResult(ok=False)
    turn_start = time.perf_counter()
    stream_headers = {**headers, "Accept": "text/event-stream"}
    body = {"input": target.message}
    async with client.stream(
        "POST", f"{target.url}/sessions/{session_id}/turns", json=body, headers=stream_headers
    ) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return TurnResult(ok=False, error=f"turns_http_{resp.status_code}")
        result.opened_at = time.perf_counter()
        ended = await _read_sse(
            resp,
            result,
            turn_start,
            text_event="message.delta",
            end_event="turn.ended",
            tool_event="tool_call.completed",
            on_open=on_open,
        )
        result.closed_at = time.perf_counter()
    result.latency = result.closed_at - started
    if ended is None:
        result.error = "stream_closed_before_turn.ended"
        return result
    status = orjson.loads(ended).get("status") if ended else None
    if status != "completed":
        result.error = f"turn_{status}"
    elif target.expect_tool and result.tool_calls == 0:
        result.error = "no_tool_call"
    else:
        result.ok = True
    return result


async def floor_turn(client: httpx.AsyncClient, target: FloorTarget, on_open: OnOpen | None = None) -> TurnResult:
    """POST /turns read to `end`."""
    started = time.perf_counter()
    result = TurnResult(ok=False)
    async with client.stream("POST", f"{target.url}/turns", json={"message": target.message}) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return TurnResult(ok=False, error=f"turns_http_{resp.status_code}")
        result.opened_at = time.perf_counter()
        ended = await _read_sse(
            resp, result, started, text_event="token", end_event="end", tool_event="tool", on_open=on_open
        )
        result.closed_at = time.perf_counter()
    result.latency = result.closed_at - started
    if ended is None:
        result.error = "stream_closed_before_end"
    elif target.expect_tool and result.tool_calls == 0:
        result.error = "no_tool_call"
    else:
        result.ok = True
    return result


async def _read_sse(
    resp: httpx.Response,
    result: TurnResult,
    t0: float,
    *,
    text_event: str,
    end_event: str,
    tool_event: str,
    on_open: OnOpen | None = None,
) -> str | None:
    """Read events until `end_event`; returns its data (or None if the stream closed first)."""
    event = ""
    async for line in resp.aiter_lines():
        if not line:
            event = ""
            continue
        if line.startswith("event:"):
            event = line[6:].strip()
            result.events += 1
            if result.ttfe is None:
                result.ttfe = time.perf_counter() - t0
            if event == text_event and result.ttft is None:
                result.first_text_at = time.perf_counter()
                result.ttft = result.first_text_at - t0
                if on_open is not None:
                    on_open()
            elif event == tool_event:
                result.tool_calls += 1
        elif line.startswith("data:") and event == end_event:
            return line[5:].strip()
    return None


def new_client(connections: int = 4, timeout_seconds: float = TURN_TIMEOUT_SECONDS) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    timeout = httpx.Timeout(timeout_seconds, connect=30.0)
    return httpx.AsyncClient(limits=limits, timeout=timeout, verify=False, trust_env=False)


async def guarded(fn: TurnFn, client: httpx.AsyncClient, timeout_seconds: float = TURN_TIMEOUT_SECONDS) -> TurnResult:
    """One turn; its timeout, an HTTP error or a broken answer is a failed turn with the error's name."""
    try:
        async with asyncio.timeout(timeout_seconds):
            return await fn(client)
    except TimeoutError:
        return TurnResult(ok=False, error="turn_timeout")
    except httpx.HTTPError as exc:
        return TurnResult(ok=False, error=type(exc).__name__)
    except (OSError, ValueError, KeyError) as exc:
        return TurnResult(ok=False, error=type(exc).__name__)


async def run_load(fn: TurnFn, *, concurrency: int, turns: int, cap_seconds: float) -> LoadResult:
    """`concurrency` clients (one connection each) share `turns` turns; the scenario stops at `cap_seconds`.

    Every client is created before any starts, so all begin together; turns still running at the cap
    are cancelled and counted as errors.
    """
    out = LoadResult()
    remaining = turns
    in_flight = 0
    clients = [new_client(1) for _ in range(concurrency)]
    go = asyncio.Event()

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal remaining, in_flight
        await go.wait()
        while remaining > 0:
            remaining -= 1
            in_flight += 1
            try:
                out.results.append(await guarded(fn, client))
            finally:
                in_flight -= 1

    tasks = [asyncio.create_task(worker(c)) for c in clients]
    started = time.perf_counter()
    go.set()
    try:
        done, pending = await asyncio.wait(tasks, timeout=cap_seconds)
        out.wall_seconds = time.perf_counter() - started
        if pending:
            out.timed_out = in_flight
            out.not_started = max(remaining, 0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                out.results.append(TurnResult(ok=False, error=type(task.exception()).__name__))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
    return out
