"""The features pass (issue 25): what each governed feature costs a turn when it is on, one at a time.

Text and tool turns at 10 clients, first with every feature off, then with each of these on alone.
A feature that needs a setting at start-up gets an agent-runtime process of its own (started with
it, warmed up, stopped after its run); the others are switched on and off through the admin API of
the phase's server. Webhook deliveries and OTLP exports go to bench/sink.py on loopback, and a run
ends when the sink has what its turns owed it (or after SETTLE_TIMEOUT_SECONDS).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

from bench.agents import BENCH_LIMITS, create_webhook, delete_webhook, get_limits, put_limits, put_policies
from bench.sink import TRACES_PATH, WEBHOOK_PATH

FEATURE_CLIENTS = 10
FEATURE_SCENARIOS = ("text", "tool")
FEATURE_LIMITS = {**BENCH_LIMITS, "max_loops": 10, "max_output_tokens": 10_000_000, "max_total_tokens": 10**9}
"""A token quota and every ceiling, all far above what a bench turn uses: checked on every turn, never refusing."""
WEBHOOK_EVENTS = ["turn.started", "turn.ended"]
GUARD_DETECTORS = ("email", "credit_card", "api_key")
GUARD_RULES = [
    {"id": f"redact-{name}", "point": "output", "detect": name, "verdict": "redact"} for name in GUARD_DETECTORS
]
"""Three output rules on the tenant: every reply streams through the guard (the bench's words never match)."""

SETTLE_TIMEOUT_SECONDS = 15.0
"""How long a run waits after its last turn for the work a feature still owes (deliveries, an export)."""


@dataclass(frozen=True)
class Switched:
    """A feature switched on: what it still owes after the load's last turn, and how to switch it off.

    `settle(turns)` runs inside the measured window, so CPU spent after the last turn (a webhook
    delivered, a batch of spans exported) counts for the run that caused it.
    """

    off: Callable[[], Awaitable[None]]
    settle: Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class Feature:
    name: str
    description: str
    switch_on: Callable[[str, str], Awaitable[Switched]]
    """(agent-runtime URL, sink URL) → switched on."""
    env: Callable[[str], dict[str, str]] = field(default=lambda _sink: {})
    """The settings it needs at start-up (sink URL → env); none: it runs on the phase's own server."""


async def sink_counts(sink: str) -> dict[str, int]:
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        return dict((await client.get(f"{sink}/health")).json())


async def wait_for_sink(sink: str, path: str, count: int, *, timeout: float = SETTLE_TIMEOUT_SECONDS) -> bool:
    """Whether the sink had received `count` POSTs to `path` before `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await sink_counts(sink)).get(path, 0) >= count:
            return True
        await asyncio.sleep(0.1)
    return False


async def _owes_nothing(_turns: int) -> None:
    return None


async def _limits(url: str, _sink: str) -> Switched:
    previous = await get_limits(url)
    await put_limits(url, FEATURE_LIMITS)
    return Switched(off=lambda: put_limits(url, previous), settle=_owes_nothing)


async def _webhook(url: str, sink: str) -> Switched:
    webhook_id = await create_webhook(url, sink + WEBHOOK_PATH, WEBHOOK_EVENTS)
    before = (await sink_counts(sink)).get(WEBHOOK_PATH, 0)

    async def delivered(turns: int) -> None:
        await wait_for_sink(sink, WEBHOOK_PATH, before + turns * len(WEBHOOK_EVENTS))

    return Switched(off=lambda: delete_webhook(url, webhook_id), settle=delivered)


async def _otlp(_url: str, sink: str) -> Switched:
    async def exported(_turns: int) -> None:
        await wait_for_sink(sink, TRACES_PATH, (await sink_counts(sink)).get(TRACES_PATH, 0) + 1)

    async def nothing_to_switch_off() -> None:
        return None

    return Switched(off=nothing_to_switch_off, settle=exported)


async def _output_guard(url: str, _sink: str) -> Switched:
    await put_policies(url, GUARD_RULES)
    return Switched(off=lambda: put_policies(url, []), settle=_owes_nothing)


FEATURES = (
    Feature("limits", "tenant token quota + ceilings (PUT /limits)", _limits),
    Feature("output_guard", f"three output rules on the tenant ({', '.join(GUARD_DETECTORS)}: redact)", _output_guard),
    Feature("webhook", f"a webhook subscription to {', '.join(WEBHOOK_EVENTS)}, delivered to the sink", _webhook),
    Feature(
        "otlp",
        "OTLP/HTTP tracing to the sink (OTEL_EXPORTER_OTLP_ENDPOINT)",
        _otlp,
        env=lambda sink: {"OTEL_EXPORTER_OTLP_ENDPOINT": sink},
    ),
)
FEATURE_NAMES = tuple(f.name for f in FEATURES)
