"""`agent-runtime chat SESSION_ID`: a conversation in the terminal, approvals asked at the prompt."""

from __future__ import annotations

import asyncio
import sys
import uuid

import httpx

from app.settings import Settings
from tests.conftest import TEST_SECRET
from tests.factories import create_agent, create_session, scripted_config
from tests.turns.loopback import serve_on_loopback

CONFIG = scripted_config(
    {"text": "Let me work it out.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[{"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval",
               "reason": "arithmetic needs a human"}],
)
CHAT_TIMEOUT_SECONDS = 60


async def _chat(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "app.cli", "chat", *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"AUTH_JWT_SECRET": TEST_SECRET, "PATH": ""},
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), timeout=CHAT_TIMEOUT_SECONDS)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_chat_streams_a_reply_and_asks_for_the_approval(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            agent = await create_agent(client, alice, CONFIG)
            session = await create_session(client, alice, agent["id"])
        token = alice["Authorization"].removeprefix("Bearer ")
        code, text, err = await _chat(
            session["id"], "--url", base_url, "--token", token, stdin=b"what is 6 times 7?\ny\n"
        )
    assert code == 0, err
    assert "Let me work it out." in text
    assert "approval needed — arithmetic needs a human" in text
    assert "approve calculator" in text
    assert "[calculator] -> 42" in text
    assert "It is 42." in text
    assert "[completed]" in text


async def test_chat_says_so_when_the_server_is_down(alice: dict[str, str]) -> None:
    token = alice["Authorization"].removeprefix("Bearer ")
    code, out, err = await _chat(str(uuid.uuid4()), "--url", "http://127.0.0.1:1", "--token", token, stdin=b"hi\n")
    assert code == 1
    assert "cannot reach the service at http://127.0.0.1:1" in err
    assert "Traceback" not in err + out


async def test_chat_checks_the_session_before_the_first_prompt(settings: Settings, alice: dict[str, str]) -> None:
    token = alice["Authorization"].removeprefix("Bearer ")
    missing = str(uuid.uuid4())
    async with serve_on_loopback(settings) as base_url:
        code, out, err = await _chat(missing, "--url", base_url, "--token", token, stdin=b"hi\n")
        refused, _, refused_err = await _chat(missing, "--url", base_url, "--token", "not-a-token")
    assert code == 1
    assert "you>" not in out
    assert f"Not Found (404): Session {missing} not found" in err
    assert "{" not in err
    assert refused == 1
    assert "the service refused the token" in refused_err


async def test_chat_with_agent_creates_a_session(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        agent = await create_agent(client, alice, scripted_config({"text": "Hello from a new session."}))
        token = alice["Authorization"].removeprefix("Bearer ")
        code, out, err = await _chat("--agent", agent["id"], "--url", base_url, "--token", token, stdin=b"hi\n")
        sessions = (await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]
    assert code == 0, err
    assert len(sessions) == 1
    assert f"session {sessions[0]['id']} on agent {agent['id']}" in out
    assert "Hello from a new session." in out
