"""`agent-runtime chat` on a real terminal (pexpect drives it on a pty, as a person would type):
deny with a reason, a reattached session asks for the approval it waits for, `--agent` by name,
and every error is one readable line."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import httpx
import pexpect

from app.settings import Settings
from tests.conftest import TEST_SECRET
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn
from tests.turns.loopback import serve_on_loopback

GATED = scripted_config(
    {"text": "Let me work it out.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
    {"text": "It is 42."},
    policies=[{"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval",
               "reason": "arithmetic needs a human"}],
)  # fmt: skip
EXPECT_SECONDS = 30
ROOT = Path(__file__).resolve().parents[1]


def _spawn(*args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable, ["-m", "app.cli", "chat", *args], cwd=str(ROOT), encoding="utf-8",
        env={"AUTH_JWT_SECRET": TEST_SECRET, "PATH": "", "PYTHONPATH": str(ROOT)}, timeout=EXPECT_SECONDS,
    )  # fmt: skip


def _token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def _deny_with_a_reason(base_url: str, token: str, session_id: str) -> str:
    chat = _spawn(session_id, "--url", base_url, "--token", token)
    chat.expect_exact("you> ")
    chat.sendline("what is 6 times 7?")
    chat.expect_exact("approval needed — arithmetic needs a human")
    chat.expect_exact('approve calculator({"expression": "6*7"})? [y/N] ')
    chat.sendline("n")
    chat.expect_exact("reason for denying (Enter for none)> ")
    chat.sendline("not before lunch")
    chat.expect_exact("you> ")
    shown = str(chat.before)
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0, shown
    return shown


async def test_deny_takes_a_reason_and_says_it(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        agent = await create_agent(client, alice, GATED)
        session = await create_session(client, alice, agent["id"])
        shown = await asyncio.to_thread(_deny_with_a_reason, base_url, _token(alice), session["id"])
        approvals = (await client.get(f"/approvals?session_id={session['id']}", headers=alice)).json()["items"]
    assert "[alice] denied: not before lunch" in shown
    assert "denied:\r\n" not in shown
    assert [(a["status"], a["decision_reason"]) for a in approvals] == [("denied", "not before lunch")]


def _reattach(base_url: str, token: str, session_id: str) -> str:
    chat = _spawn(session_id, "--url", base_url, "--token", token)
    chat.expect_exact("this session waits for 1 approval")
    chat.expect_exact("approve calculator")
    chat.expect_exact("[y/N] ")
    chat.sendline("y")
    chat.expect_exact("[completed]")
    chat.expect_exact("you> ")
    shown = str(chat.before)
    chat.sendeof()
    chat.expect(pexpect.EOF)
    return shown


async def test_reattaching_asks_for_the_pending_approval(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        agent = await create_agent(client, alice, GATED)
        session = await create_session(client, alice, agent["id"])
        frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "6*7?"},
                                 headers=alice)  # fmt: skip
        assert frames[-1].data["status"] == "interrupted"  # the terminal went away here
        await asyncio.to_thread(_reattach, base_url, _token(alice), session["id"])
        turns = (await client.get(f"/sessions/{session['id']}/turns", headers=alice)).json()["items"]
    assert [t["status"] for t in turns] == ["completed"]
    assert turns[0]["final_output"] == "It is 42."


def _run_to_the_end(*args: str) -> tuple[int, str]:
    chat = _spawn(*args)
    chat.expect(pexpect.EOF)
    chat.close()
    return int(chat.exitstatus if chat.exitstatus is not None else -1), str(chat.before)


def _by_name(base_url: str, token: str) -> str:
    chat = _spawn("--agent", "calculator-demo", "--url", base_url, "--token", token)
    chat.expect(r"session \S+ on agent \S+ \(version 1\)")
    first = str(chat.after)
    chat.expect_exact("you> ")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    return first


async def test_agent_by_name_and_errors_in_one_line(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        agent = await create_agent(client, alice, GATED, name="calculator-demo")
        token = _token(alice)
        first = await asyncio.to_thread(_by_name, base_url, token)
        sessions = (await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]
        failures = [
            await asyncio.to_thread(_run_to_the_end, "--agent", "no-such-agent", "--url", base_url, "--token", token),
            await asyncio.to_thread(_run_to_the_end, "not-a-session", "--url", base_url, "--token", token),
            await asyncio.to_thread(_run_to_the_end, str(uuid.uuid4()), "--url", base_url, "--token", token),
            await asyncio.to_thread(_run_to_the_end, str(uuid.uuid4()), "--url", base_url, "--token", "forged"),
        ]
    assert first == f"session {sessions[0]['id']} on agent {agent['id']} (version 1)"
    expected = [
        "error: no agent named 'no-such-agent' (nor is it an agent id); see GET /agents",
        "error: 'not-a-session' is not a session id (a UUID); start a new one with --agent NAME",
        "error: Not Found (404): Session ",
        "error: the service refused the token: ",
    ]
    for (code, out), start in zip(failures, expected, strict=True):
        assert code == 1, out
        lines = out.strip().splitlines()
        assert len(lines) == 1, out
        assert lines[0].startswith(start), out
