"""`agent-runtime chat SESSION_ID`: a conversation in the terminal, approvals asked at the prompt."""

from __future__ import annotations

import asyncio
import sys

import httpx

from app.settings import Settings
from tests.conftest import TEST_SECRET
from tests.factories import create_agent, create_session, scripted_config
from tests.turns.loopback import serve_on_loopback

CONFIG = scripted_config(
    {"text": "Let me work it out.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[{"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}],
)


async def test_chat_streams_a_reply_and_asks_for_the_approval(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            agent = await create_agent(client, alice, CONFIG)
            session = await create_session(client, alice, agent["id"])
        token = alice["Authorization"].removeprefix("Bearer ")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app.cli", "chat", session["id"], "--url", base_url, "--token", token,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={"AUTH_JWT_SECRET": TEST_SECRET, "PATH": ""},
        )
        out, err = await asyncio.wait_for(process.communicate(b"what is 6 times 7?\ny\n"), timeout=60)
    text = out.decode()
    assert process.returncode == 0, err.decode()
    assert "Let me work it out." in text
    assert "approve calculator" in text
    assert "[calculator] -> 42" in text
    assert "It is 42." in text
    assert "[completed]" in text
