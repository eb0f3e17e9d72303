"""The processes of a phase: a mock provider, its floor and agent-runtime (more when a pass needs them)."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.agents import SECRET, TOKENS_PER_REPLY
from bench.log import log
from bench.plan import Plan
from bench.procs import LOOPBACK, Proc, ProcSet, free_port

OPENAI_SCENARIOS = ("openai-text", "openai-tool")
"""The `openai` provider against an OpenAI-compatible mock, with its own floor on the `openai` SDK."""


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
    floor_args: list[str] = field(default_factory=list)
    ar_extra_env: dict[str, str] = field(default_factory=dict)
    """Settings of this phase's agent-runtime on top of the bench's (the idle run's connection pool)."""
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
            *phase.floor_args,
        ],
        port=floor_port,
    )
    data_dir = work / f"data-{phase.name}"
    data_dir.mkdir(parents=True, exist_ok=True)
    phase.ar_env = {**_ar_env(db_url, phase.mock.url, data_dir, pool), **phase.ar_extra_env}
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


def phases_for(plan: Plan) -> list[Phase]:
    wanted = plan.scenarios
    phases = [
        Phase("text", [], [s for s in ("text", "scripted") if s in wanted]),
        Phase("tool", ["--tool-mode"], ["tool"] if "tool" in wanted else []),
        Phase(
            "idle",
            ["--delay-ms", f"{plan.idle_delay_ms:g}"],
            ["idle"] if "idle" in wanted else [],
            # Both servers' provider pools hold every stream the idle run opens.
            floor_args=["--connections", str(max(1000, plan.idle_streams))],
            ar_extra_env={"PROVIDER_MAX_CONNECTIONS": str(max(500, plan.idle_streams))},
        ),
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


async def start_sink(procs: ProcSet) -> str:
    """bench/sink.py for the whole run: the features pass's webhook and OTLP receiver."""
    port = free_port()
    sink = procs.start("sink", [_python(), "-m", "bench.sink", "--port", str(port)], port=port)
    await asyncio.to_thread(sink.wait_healthy, "/health", timeout=30)
    return sink.url
