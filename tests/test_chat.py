"""`agent-runtime chat SESSION_ID`: a conversation in the terminal, approvals asked at the prompt."""

from __future__ import annotations

import asyncio
import sys
import uuid

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Receive, Scope, Send

from app.cli.chat import _show
from app.cli.chat_turn import DEFAULT_RETRY_MS, MAX_RECONNECTS
from app.main import create_app
from app.settings import Settings
from tests.conftest import TEST_SECRET
from tests.factories import create_agent, create_session, scripted_config
from tests.handover import RETRY_MS, TOOL_THEN_ANSWER, HandOver, HandOverApp
from tests.turns.loopback import serve_asgi, serve_on_loopback

CONFIG = scripted_config(
    {"text": "Let me work it out.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[
        {
            "id": "gate",
            "point": "tool",
            "tool": "calculator",
            "verdict": "requires_approval",
            "reason": "arithmetic needs a human",
        }
    ],
)
CHAT_TIMEOUT_SECONDS = 60


async def _chat(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "chat",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
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


async def _assistant_texts(base_url: str, headers: dict[str, str], session_id: str) -> list[str]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        messages = (await client.get(f"/sessions/{session_id}/messages", headers=headers)).json()["items"]
    return [m["content"] for m in messages if m["role"] == "assistant" and m["content"]]


@pytest.mark.parametrize(
    "plan",
    [HandOver(durable=2, lost=13), HandOver(durable=2, lost=13, reason="replica_lost", died=True)],
    ids=["drained", "died"],
)
async def test_chat_reconnects_after_a_hand_over_and_keeps_only_what_was_stored(
    settings: Settings, sql: AsyncEngine, alice: dict[str, str], capsys: pytest.CaptureFixture[str], plan: HandOver
) -> None:
    front = HandOverApp(create_app(settings), sql, plan)
    async with serve_asgi(front, lifespan="on") as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            agent = await create_agent(client, alice, TOOL_THEN_ANSWER)
            session = await create_session(client, alice, agent["id"])
        with httpx.Client(base_url=base_url, headers=alice, timeout=httpx.Timeout(30)) as client:
            view = await asyncio.to_thread(_show, client, f"/sessions/{session['id']}/turns", {"input": "echo?"})
        stored = await _assistant_texts(base_url, alice, session["id"])
    out = capsys.readouterr().out
    assert front.result is not None
    lost_text = "".join(e["text"] for e in front.result.shown if e["type"] == "message.delta")
    assert lost_text.startswith("Let me ASK THE")  # the terminal showed the lost run's text …
    assert lost_text in out
    notice = f"[the turn moved to another replica ({plan.reason}): "
    assert out.count(notice) == 1
    before, after = out.split(notice)
    assert "characters of the reply and 1 tool result above are withdrawn and redone below]" in after
    assert "[echo] -> hello" in before
    assert after.count("Let me ask the echo tool.") == 1  # … and then the reply as made again, once
    assert after.count("[echo] -> hello") == 1
    assert after.rstrip().endswith("The echo said hello.\n[completed]")
    assert view.ended
    assert view.retry_ms == (DEFAULT_RETRY_MS if plan.died else RETRY_MS)  # the hint it waited before reconnecting
    assert view.replies == stored == ["Let me ask the echo tool.", "The echo said hello."]
    resumed = next(e for e in view.events if e["type"] == "turn.resumed")
    assert [e["type"] for e in view.events if e["seq"] < resumed["seq"]][-1] == "node.started"  # no delta kept


def _refusing_follows(app: ASGIApp) -> ASGIApp:
    """Every `GET /turns/{id}/events` answers 503, as if no replica could serve the turn's stream."""

    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/events"):
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return front


async def test_chat_gives_up_reconnecting_with_a_clear_message(
    settings: Settings, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    front = HandOverApp(create_app(settings), sql)
    async with serve_asgi(_refusing_follows(front), lifespan="on") as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            agent = await create_agent(client, alice, TOOL_THEN_ANSWER)
            session = await create_session(client, alice, agent["id"])
        token = alice["Authorization"].removeprefix("Bearer ")
        code, out, err = await _chat(session["id"], "--url", base_url, "--token", token, stdin=b"echo?\n")
    assert front.result is not None
    turn_id = front.result.stored[0]["turn_id"]
    assert code == 1
    assert err.count("(reconnecting: the service answered HTTP 503)") == MAX_RECONNECTS
    assert f"error: lost the stream of turn {turn_id} ({MAX_RECONNECTS} reconnects brought nothing)" in err
    assert "Traceback" not in err + out
