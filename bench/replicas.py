"""Two replicas serving the same sessions: nothing lost, nothing doubled (docs/scaling.md).

    python -m bench.replicas                     # 20 sessions x 6 tool turns, alternating replicas
    python -m bench.replicas --sessions 50 --turns 10

Starts the mock Anthropic server in tool mode (each turn: one `echo` call, then the answer) and two
`agent-runtime serve` processes on one fresh PostgreSQL database. Every session's turns alternate
between the replicas (turn 1 on A, turn 2 on B, …), sessions run concurrently, and each turn's stream
is read live on the replica that started it and replayed afterwards from the other one. Then it
checks the database and prints what it found: every turn completed, each turn's events gapless with
one `turn.ended`, the replay equal to the live stream, one ledger row and one `tool_call.completed`
per tool call, and four messages a turn in every session. Exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson

from bench.agents import BENCH_LIMITS, LLM_AGENT, TOKENS_PER_REPLY, create_agent, mint_token, put_limits
from bench.db import BenchDatabase, admin_url_from_env
from bench.procs import ProcSet, free_port
from bench.run import run_to_the_end
from bench.servers import _ar_argv, _ar_env, _python

MESSAGES_PER_TURN = 4
"""The user's input, the reply asking for the call, the tool's result, the answer."""
CHECKS = """
SELECT
  (SELECT count(*) FROM turns WHERE status <> 'completed') AS not_completed,
  (SELECT count(*) FROM (
     SELECT turn_id FROM turn_events GROUP BY turn_id HAVING count(*) <> max(seq) OR min(seq) <> 1
   ) gaps) AS turns_with_gaps,
  (SELECT count(*) FROM (
     SELECT turn_id FROM turn_events WHERE type = 'turn.ended' GROUP BY turn_id HAVING count(*) <> 1
   ) ends) AS turns_not_ended_once,
  (SELECT count(*) FROM tool_executions) AS ledger_rows,
  (SELECT count(*) FROM tool_executions WHERE status <> 'completed') AS ledger_not_completed,
  (SELECT count(*) FROM turn_events WHERE type = 'tool_call.completed') AS tool_completed_events,
  (SELECT count(*) FROM (
     SELECT session_id FROM messages GROUP BY session_id HAVING count(*) <> $1
   ) odd) AS sessions_with_other_message_counts,
  (SELECT count(*) FROM turns) AS turns
"""


@dataclass
class Tally:
    turns_by_replica: list[int] = field(default_factory=lambda: [0, 0])
    failed: list[str] = field(default_factory=list)
    replay_mismatches: int = 0
    events: int = 0


def _frames(text: str) -> list[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) of each SSE frame of a body."""
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields and "id" in fields:
            out.append((int(fields["id"]), fields["event"], orjson.loads(fields.get("data", "{}"))))
    return out


async def _turn(
    clients: list[httpx.AsyncClient], headers: dict[str, str], session_id: str, index: int, tally: Tally
) -> None:
    here, other = clients[index % 2], clients[(index + 1) % 2]
    body = {"input": f"turn {index}: call echo"}
    stream = {**headers, "Accept": "text/event-stream"}
    response = await here.post(f"/sessions/{session_id}/turns", json=body, headers=stream)
    live = _frames(response.text)
    tally.turns_by_replica[index % 2] += 1
    ended = [data for _, event, data in live if event == "turn.ended"]
    if response.status_code != 200 or not ended or ended[-1].get("status") != "completed":
        tally.failed.append(f"{session_id} turn {index}: HTTP {response.status_code}, ended {ended}")
        return
    tally.events += len(live)
    turn_id = ended[-1]["turn_id"]
    replayed = _frames((await other.get(f"/turns/{turn_id}/events", headers=headers)).text)
    if [(i, e) for i, e, _ in replayed] != [(i, e) for i, e, _ in live]:
        tally.replay_mismatches += 1


async def _session(
    clients: list[httpx.AsyncClient], headers: dict[str, str], agent_id: str, turns: int, tally: Tally
) -> None:
    created = await clients[0].post("/sessions", json={"agent_id": agent_id}, headers=headers)
    created.raise_for_status()
    for index in range(turns):
        await _turn(clients, headers, created.json()["id"], index, tally)


async def _checks(db: BenchDatabase, turns: int) -> dict[str, int]:
    conn = await asyncpg.connect(db.dsn, timeout=10)
    try:
        row = await conn.fetchrow(CHECKS, MESSAGES_PER_TURN * turns)
    finally:
        await conn.close()
    assert row is not None
    return {key: int(value) for key, value in row.items()}


async def replicas(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="agent-runtime-replicas-"))
    db = BenchDatabase(args.pg_url or admin_url_from_env())
    procs = ProcSet(work)
    try:
        await db.create()
        await db.migrate()
        mock_port = free_port()
        mock = procs.start(
            "mock-tool",
            [_python(), "-m", "bench.mock_anthropic", "--port", str(mock_port), "--tokens", str(TOKENS_PER_REPLY),
             "--tool-mode"],
            port=mock_port,
        )  # fmt: skip
        await asyncio.to_thread(mock.wait_healthy, "/health", timeout=30)
        servers = []
        for name in ("a", "b"):
            port = free_port()
            data_dir = work / f"data-{name}"
            data_dir.mkdir()
            servers.append(
                procs.start(f"agent-runtime-{name}", _ar_argv(port), port=port, env=_ar_env(db.url, mock.url, data_dir))
            )
        for server in servers:
            await asyncio.to_thread(server.wait_healthy, "/readyz", timeout=90)
        token = mint_token()
        headers = {"Authorization": f"Bearer {token}"}
        await put_limits(servers[0].url, BENCH_LIMITS)
        agent_id = await create_agent(servers[0].url, token, "replicas-agent", LLM_AGENT)
        tally = Tally()
        started = time.perf_counter()
        async with (
            httpx.AsyncClient(base_url=servers[0].url, timeout=120, trust_env=False) as on_a,
            httpx.AsyncClient(base_url=servers[1].url, timeout=120, trust_env=False) as on_b,
        ):
            await asyncio.gather(
                *(_session([on_a, on_b], headers, agent_id, args.turns, tally) for _ in range(args.sessions))
            )
        elapsed = time.perf_counter() - started
        found = await _checks(db, args.turns)
        return _report(args, tally, found, elapsed)
    finally:
        procs.stop_all()
        await db.drop()


def _report(args: argparse.Namespace, tally: Tally, found: dict[str, int], elapsed: float) -> int:
    expected = args.sessions * args.turns
    checks = {
        "turns stored": (found["turns"], expected),
        "turns not completed": (found["not_completed"], 0),
        "turns whose events have a gap": (found["turns_with_gaps"], 0),
        "turns without exactly one turn.ended": (found["turns_not_ended_once"], 0),
        "ledger rows (one per tool call)": (found["ledger_rows"], expected),
        "ledger rows not completed": (found["ledger_not_completed"], 0),
        "tool_call.completed events": (found["tool_completed_events"], expected),
        "sessions without 4 messages a turn": (found["sessions_with_other_message_counts"], 0),
        "replays unlike the live stream": (tally.replay_mismatches, 0),
        "turns that failed on the wire": (len(tally.failed), 0),
    }
    print(f"two replicas, {args.sessions} sessions x {args.turns} tool turns, alternating replicas")
    print(f"  turns started on A / B: {tally.turns_by_replica[0]} / {tally.turns_by_replica[1]}")
    print(f"  {tally.events} events read live, {expected / elapsed:.1f} turns/s over both replicas")
    for name, (got, want) in checks.items():
        print(f"  {'PASS' if got == want else 'FAIL'}  {name}: {got} (expected {want})")
    for failure in tally.failed[:10]:
        print(f"  failed: {failure}")
    return 0 if all(got == want for got, want in checks.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.replicas", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=6, help="turns per session")
    parser.add_argument("--pg-url", default=None)
    args = parser.parse_args(argv)
    return run_to_the_end("bench.replicas", replicas(args))


if __name__ == "__main__":
    sys.exit(main())
