"""The Claude SDK runtime's costs against the loopback Messages API (docs/performance.md, "Claude SDK runtime").

    python -m bench.claude_sdk [--sessions 3] [--turns 20] [--tokens 50]

Measures, on this machine, with the service in-process on an SQLite file in a temporary folder and
`bench.mock_anthropic` on loopback:
- per SDK session: the start-up time of its Claude Code process (SDK `connect`, up to the CLI's
  answer to `initialize`) and the process's resident memory after its first turn;
- sequential turns per second in one session, `"runtime": "claude_sdk"` against `"runtime":
  "langgraph"` with the `anthropic` provider, both answered by the same mock (text replies of
  `--tokens` words). Bounded: a few sessions and a few dozen turns; it stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from asgi_lifespan import LifespanManager

from app.auth.verify import mint_user_token
from app.main import create_app
from app.settings import AnthropicSettings, AuthSettings, ClaudeSdkSettings, DbSettings, ObservabilitySettings, Settings
from bench.mock_anthropic import Behaviour, build_app

SECRET = "bench-secret-of-sufficient-length-0123456789"
KEY = "sk-ant-bench-0000000000"


async def serve_mock(tokens: int) -> tuple[str, uvicorn.Server, asyncio.Task[None]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build_app(Behaviour(tokens=tokens)), log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, task


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def claude_children() -> set[int]:
    """Pids of the Claude Code processes this process started that are still alive."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            exe = os.readlink(entry / "exe")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and exe.endswith("/claude"):
            pids.add(int(entry.name))
    return pids


async def session_of(client: httpx.AsyncClient, headers: dict[str, str], runtime: str) -> str:
    config: dict[str, Any] = {
        "model": {"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": 256},
        "system_prompt": "You are terse.",
        "runtime": runtime,
    }
    agent = (await client.post("/agents", json={"name": f"bench-{runtime}", "config": config}, headers=headers)).json()
    created = await client.post("/sessions", json={"agent_id": agent["id"]}, headers=headers)
    return str(created.json()["id"])


async def one_turn(client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> None:
    response = await client.post(
        f"/sessions/{session_id}/turns", json={"input": "hello"}, headers=headers | {"Accept": "application/json"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "completed", response.text


async def turns_per_second(client: httpx.AsyncClient, headers: dict[str, str], runtime: str, turns: int) -> float:
    session_id = await session_of(client, headers, runtime)
    await one_turn(client, headers, session_id)  # warm: the SDK session's process starts here
    started = time.perf_counter()
    for _ in range(turns):
        await one_turn(client, headers, session_id)
    return turns / (time.perf_counter() - started)


async def run(sessions: int, turns: int, tokens: int) -> None:
    base_url, mock, mock_task = await serve_mock(tokens)
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(
            data_dir=Path(data_dir),
            db=DbSettings(url=f"sqlite+aiosqlite:///{data_dir}/bench.db"),
            auth=AuthSettings(jwt_secret=SECRET),
            anthropic=AnthropicSettings(api_key=KEY, base_url=base_url),
            claude_sdk=ClaudeSdkSettings(max_sessions=sessions + 2, idle_seconds=600),
            observability=ObservabilitySettings(log_level="warning"),
        )
        app = create_app(settings)
        token = mint_user_token(SECRET, tenant_id="bench", sub="bench", roles=[], ttl_seconds=3600)
        headers = {"Authorization": f"Bearer {token}"}
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as client:
                pool = app.state.container.claude_sdk.pool
                starts, rss = [], []
                for _ in range(sessions):
                    before = claude_children()
                    session_id = await session_of(client, headers, "claude_sdk")
                    await one_turn(client, headers, session_id)
                    lease = pool.get(uuid.UUID(session_id))
                    starts.append(lease.started_seconds)
                    rss += [rss_kib(pid) for pid in claude_children() - before]
                print(f"SDK session start-up: median {statistics.median(starts):.2f} s, max {max(starts):.2f} s "
                      f"({sessions} sessions)")  # fmt: skip
                print(f"Claude Code RSS after one turn: median {statistics.median(rss) / 1024:.0f} MiB, "
                      f"max {max(rss) / 1024:.0f} MiB")  # fmt: skip
                for runtime in ("langgraph", "claude_sdk"):
                    rate = await turns_per_second(client, headers, runtime, turns)
                    print(f"{runtime}: {rate:.1f} turns/s ({turns} sequential turns, one session, {tokens} words)")
    mock.should_exit = True
    await mock_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.turns, args.tokens))


if __name__ == "__main__":
    main()
