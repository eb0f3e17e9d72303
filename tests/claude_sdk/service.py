"""The service side of the Claude SDK tests: agent configurations and turns through the API."""

from __future__ import annotations

from typing import Any

import httpx

from tests.claude_sdk.mock_anthropic import LOOP_MARKER, MockAnthropic, Step
from tests.factories import create_agent, create_session
from tests.sse import Frame, read_turn

ECHO_TWO_DENIED = {"id": "no-twos", "point": "tool", "tool": "echo", "args": {"text": "two"}, "verdict": "deny",
                   "reason": "twos are not allowed"}  # fmt: skip
CALC_NEEDS_HUMAN = {"id": "calc-human", "point": "tool", "tool": "calculator", "verdict": "requires_approval",
                    "reason": "arithmetic needs a human"}  # fmt: skip


def sdk_config(**extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": {"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": 512},
        "system_prompt": f"{LOOP_MARKER} You are terse.",
        "runtime": "claude_sdk",
        "tools": ["builtin:echo", "builtin:calculator"],
        "policies": [ECHO_TWO_DENIED, CALC_NEEDS_HUMAN],
    }
    return config | extra


async def new_session(api: httpx.AsyncClient, headers: dict[str, str], **extra: Any) -> str:
    agent = await create_agent(api, headers, sdk_config(**extra), name="sdk-agent")
    return str((await create_session(api, headers, agent["id"]))["id"])


async def turn(api: httpx.AsyncClient, headers: dict[str, str], session_id: str, text: str, **body: Any) -> list[Frame]:
    url = f"/sessions/{session_id}/turns"
    return await read_turn(api, "POST", url, json={"input": text, **body}, headers=headers)


async def session_after_one_turn(
    api: httpx.AsyncClient, headers: dict[str, str], anthropic: MockAnthropic, reply: str
) -> str:
    session_id = await new_session(api, headers)
    anthropic.play(Step(text=reply))
    await turn(api, headers, session_id, "hi")
    return session_id


def of(frames: list[Frame], event: str) -> list[dict[str, Any]]:
    return [f.data for f in frames if f.event == event]
