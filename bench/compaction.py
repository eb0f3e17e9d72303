"""Prompt size over a long session, with and without compaction (issue 13).

    python -m bench.compaction                 # 200 turns, window 2,000 tokens, printed every 10 turns
    python -m bench.compaction --turns 50 --window 1000 --every 5

Runs the service in process on a temporary SQLite file with the scripted provider (one token a
word, so the reported input tokens are the prompt's exact size): every turn asks a question, the
model looks something up with a tool and answers. The same conversation runs twice: on an agent
whose window is `--window` (compaction: summarize at 0.8 of it, keep the last 6 messages) and on
one whose window is far larger than the conversation ever gets (no compaction). For each turn it
prints the largest prompt the model was sent, in tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from asgi_lifespan import LifespanManager

from app.auth.verify import mint_user_token
from app.main import create_app
from app.settings import AuthSettings, DbSettings, ObservabilitySettings, Settings

SECRET = "bench-compaction-secret-0123456789abcdef"
UNBOUNDED_WINDOW = 100_000_000
LOOKUP = {
    "text": "Let me check the records.",
    "tool_calls": [{"name": "echo", "arguments": {"text": " ".join(f"record{i}" for i in range(60))}}],
}
ANSWER = {"text": "According to the records: " + " ".join(f"detail{i}" for i in range(40))}


@dataclass
class Series:
    prompt_tokens: list[int] = field(default_factory=list)
    """Per turn: the largest prompt sent to the model."""
    compactions: int = 0
    compaction_tokens: int = 0
    """Input + output tokens of the summarisation calls."""


def agent_config(window: int) -> dict[str, Any]:
    return {
        "model": {"provider": "scripted", "script": [LOOKUP, ANSWER, ANSWER], "context_window": window},
        "system_prompt": "You are a records clerk. Answer from the records you look up.",
        "tools": ["builtin:echo"],
        "context": {"compaction": {"strategy": "summarize", "trigger_ratio": 0.8, "keep_last_messages": 6}},
    }


async def run_session(client: httpx.AsyncClient, headers: dict[str, str], window: int, turns: int) -> Series:
    agent = (await client.post("/agents", json={"name": f"w{window}", "config": agent_config(window)},
                               headers=headers)).json()  # fmt: skip
    session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=headers)).json()
    series = Series()
    for turn in range(turns):
        question = f"Question {turn}: what do the records say about case {turn} and who handled it?"
        async with client.stream("POST", f"/sessions/{session['id']}/turns", json={"input": question},
                                 headers=headers) as response:  # fmt: skip
            body = (await response.aread()).decode()
        largest = 0
        for line in body.splitlines():
            if not line.startswith("data: "):
                continue
            event = orjson.loads(line[6:])
            if event["type"] == "usage" and event.get("kind", "model") == "model":
                largest = max(largest, event["input_tokens"])
            elif event["type"] == "usage":
                series.compaction_tokens += event["input_tokens"] + event["output_tokens"]
            elif event["type"] == "context.compacted":
                series.compactions += 1
            elif event["type"] == "turn.ended" and event["status"] != "completed":
                raise SystemExit(f"turn {turn} ended {event['status']}: {event.get('error')}")
        series.prompt_tokens.append(largest)
    return series


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            data_dir=Path(data),
            db=DbSettings(url=f"sqlite+aiosqlite:///{Path(data) / 'bench.db'}"),
            auth=AuthSettings(jwt_secret=SECRET),
            observability=ObservabilitySettings(log_level="warning"),
        )
        app = create_app(settings)
        token = mint_user_token(SECRET, tenant_id="bench", sub="bench", roles=[], ttl_seconds=3600)
        headers = {"Authorization": f"Bearer {token}"}
        async with LifespanManager(app, startup_timeout=60) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as client:
                without = await run_session(client, headers, UNBOUNDED_WINDOW, args.turns)
                with_ = await run_session(client, headers, args.window, args.turns)
    report(args, without, with_)


def report(args: argparse.Namespace, without: Series, with_: Series) -> None:
    print(f"prompt tokens per turn (largest prompt of the turn), {args.turns} turns, scripted provider")
    print(f"with compaction: window {args.window}, summarize at 0.8 x window, keep the last 6 messages")
    print(f"{'turn':>6} {'without':>10} {'with':>8}")
    for turn in range(0, args.turns, args.every):
        print(f"{turn + 1:>6} {without.prompt_tokens[turn]:>10} {with_.prompt_tokens[turn]:>8}")
    if (args.turns - 1) % args.every:
        print(f"{args.turns:>6} {without.prompt_tokens[-1]:>10} {with_.prompt_tokens[-1]:>8}")
    print(f"max    {max(without.prompt_tokens):>10} {max(with_.prompt_tokens):>8}")
    print(f"total  {sum(without.prompt_tokens):>10} {sum(with_.prompt_tokens):>8}  (largest prompts summed over turns)")
    print(f"compactions with: {with_.compactions}, their calls cost {with_.compaction_tokens} tokens; "
          f"without: {without.compactions}")  # fmt: skip


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=2000)
    parser.add_argument("--every", type=int, default=10, help="print every n-th turn")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
