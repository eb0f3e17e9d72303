"""The real Claude Agent SDK and its bundled Claude Code CLI, driven against the loopback Anthropic API.

One Claude Code process is shared by the tests of this module (starting one takes seconds); each
test scripts the model calls it makes and binds its own gate, as a turn does.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeSDKClient, ResultMessage

from app.claude_sdk.events import Event, EventMapper
from app.claude_sdk.gate import ToolGate, Verdict
from app.claude_sdk.options import Provider, SessionFolders, session_options
from app.claude_sdk.router import SessionRouter
from app.claude_sdk.surface import ToolSurface, claude_tools
from app.core.sql import Sql
from app.governance.gate import Governance
from app.governance.policy import Decision
from app.tools.base import ToolResult
from app.tools.builtin import BUILTIN_TOOLS, run_builtin
from tests.claude_sdk.conftest import MOCK_KEY
from tests.claude_sdk.mock_anthropic import LOOP_MARKER, MockAnthropic, Step

NO_TWOS = {"id": "no-twos", "point": "tool", "tool": "echo", "args": {"text": "two"}, "verdict": "deny",
           "reason": "twos are not allowed"}  # fmt: skip


@dataclass
class Recorder:
    """The turn's side of the gate, kept in memory: receipts, verdicts, the tool calls that ran."""

    decisions: list[tuple[str, Decision]] = field(default_factory=list)
    verdicts: list[tuple[str, str, Verdict]] = field(default_factory=list)
    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    done: dict[str, ToolResult] = field(default_factory=dict)

    async def stored_result(self, tool_call_id: str) -> ToolResult | None:
        return self.done.get(tool_call_id)

    def record_decision(self, decision: Decision, *, tool_call_id: str, tool_name: str) -> None:
        self.decisions.append((tool_call_id, decision))

    async def on_verdict(self, tool_call_id: str, name: str, arguments: dict[str, Any], verdict: Verdict) -> Verdict:
        self.verdicts.append((tool_call_id, name, verdict))
        return verdict

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.ran.append((name, arguments))
        return await run_builtin(name, arguments)


@dataclass
class Session:
    client: ClaudeSDKClient
    router: SessionRouter
    surface: ToolSurface
    governance: Governance
    folders: SessionFolders

    def bind(self) -> Recorder:
        recorder = Recorder()
        self.router.bind(ToolGate(self.surface, self.governance, recorder), recorder.run)
        return recorder

    async def turn(self, prompt: str) -> tuple[list[Event], ResultMessage]:
        mapper = EventMapper()
        events: list[Event] = []
        await self.client.query(prompt)
        async for message in self.client.receive_response():
            events += mapper.map(message)
            if isinstance(message, ResultMessage):
                return events, message
        raise AssertionError("the SDK turn ended without a result")


async def _open(
    mock: MockAnthropic, hot_sql: Sql, data_dir: Path, tool_refs: list[str], builtins: list[str]
) -> Session:
    session_id = uuid.uuid4()
    router = SessionRouter()
    folders = SessionFolders.of(data_dir, session_id)
    surface = ToolSurface(
        served=tuple(BUILTIN_TOOLS[n].spec for n in builtins),
        native=tuple(claude_tools(tool_refs)),
        workdir=folders.work,
    )
    snapshot = {"model": {"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": 512},
                "system_prompt": f"{LOOP_MARKER} You are terse."}  # fmt: skip
    options = session_options(
        session_id=session_id,
        snapshot=snapshot,
        folders=folders,
        provider=Provider(api_key=MOCK_KEY, base_url=mock.base_url),
        native_tools=list(surface.native),
        server=surface.server(router.run_tool) if surface.served else None,
        can_use_tool=router.can_use_tool,
        hooks=router.hooks(),
    )
    client = ClaudeSDKClient(options)
    await client.connect()
    governance = Governance(hot_sql, tenant_id=f"t-{uuid.uuid4().hex[:8]}", agent_rules=[NO_TWOS], tool_blacklist=[])
    return Session(client, router, surface, governance, folders)


@pytest.fixture(scope="module")
async def echo_session(mock_anthropic: MockAnthropic, hot_sql: Sql, data_dir: Path) -> AsyncIterator[Session]:
    session = await _open(mock_anthropic, hot_sql, data_dir, ["builtin:echo"], ["echo"])
    try:
        yield session
    finally:
        await session.client.disconnect()


async def test_a_text_reply_streams_as_deltas_from_partial_messages(
    anthropic: MockAnthropic, echo_session: Session
) -> None:
    echo_session.bind()
    anthropic.play(Step(text="Hello from the loopback model"))

    events, result = await echo_session.turn("hi")

    deltas = [data["text"] for kind, data in events if kind == "message.delta"]
    completed = [data for kind, data in events if kind == "message.completed"]
    assert len(deltas) > 1
    assert "".join(deltas) == "Hello from the loopback model"
    assert completed == [{"text": "Hello from the loopback model", "stop_reason": "end_turn"}]
    usage = [data for kind, data in events if kind == "usage"]
    assert len(usage) == 1
    assert usage[0]["input_tokens"] > 0
    assert usage[0]["output_tokens"] == 5
    assert result.subtype == "success"
    assert result.result == "Hello from the loopback model"


async def test_the_cli_only_calls_the_messages_api_with_our_key(
    anthropic: MockAnthropic, echo_session: Session
) -> None:
    echo_session.bind()
    anthropic.play(Step(text="fine"))

    await echo_session.turn("anything else?")

    assert {(e.method, e.path) for e in anthropic.log} == {("POST", "/v1/messages")}
    loop = anthropic.loop_requests()
    assert len(loop) == 1
    assert loop[0]["stream"] is True
    assert loop[0]["model"] == "claude-sonnet-4-5"
    assert [tool["name"] for tool in loop[0]["tools"]] == ["mcp__agent__echo"]
    assert all(e.headers["x-api-key"] == MOCK_KEY for e in anthropic.log)


async def test_a_tool_call_passes_the_gate_allowed_then_denied(anthropic: MockAnthropic, echo_session: Session) -> None:
    recorder = echo_session.bind()
    anthropic.play(
        Step(text="Let me echo.", tool_calls=[("mcp__agent__echo", {"text": "one"})]),
        Step(tool_calls=[("mcp__agent__echo", {"text": "two"})]),
        Step(text="done"),
    )

    events, result = await echo_session.turn("echo one then two")

    assert recorder.ran == [("echo", {"text": "one"})]
    assert [(v.outcome, name) for _, name, v in recorder.verdicts] == [("allow", "echo"), ("deny", "echo")]
    assert [d.rule_id for _, d in recorder.decisions] == [None, "no-twos"]
    requested = [data for kind, data in events if kind == "tool_call.requested"]
    assert [(r["name"], r["arguments"]) for r in requested] == [("echo", {"text": "one"}), ("echo", {"text": "two"})]
    completed = [data for kind, data in events if kind == "tool_call.completed"]
    assert [(c["tool_call_id"], c["is_error"]) for c in completed] == [
        (r["tool_call_id"], e) for r, e in zip(requested, [False, True], strict=True)
    ]
    assert completed[0]["result"] == "one"
    assert "twos are not allowed" in completed[1]["result"]
    last = anthropic.loop_requests()[-1]["messages"]
    denied = [b for m in last for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"][-1]
    assert denied["is_error"] is True
    assert "twos are not allowed" in str(denied["content"])
    assert result.result == "done"


async def test_between_turns_a_session_runs_no_tool(anthropic: MockAnthropic, echo_session: Session) -> None:
    echo_session.router.unbind()
    anthropic.play(Step(tool_calls=[("mcp__agent__echo", {"text": "stray"})]), Step(text="ok then"))

    events, _ = await echo_session.turn("try it")

    completed = [data for kind, data in events if kind == "tool_call.completed"]
    assert len(completed) == 1
    assert completed[0]["is_error"] is True
    assert "no turn is running" in completed[0]["result"]


async def test_a_claude_tool_reads_inside_its_directory_and_not_outside(
    anthropic: MockAnthropic, hot_sql: Sql, data_dir: Path, tmp_path: Path
) -> None:
    session = await _open(anthropic, hot_sql, data_dir, ["claude:Read"], [])
    try:
        recorder = session.bind()
        (session.folders.work / "notes.txt").write_text("inside the session folder\n")
        outside = tmp_path / "secret.txt"
        outside.write_text("outside the session folder\n")
        anthropic.play(
            Step(tool_calls=[("Read", {"file_path": str(session.folders.work / "notes.txt")})]),
            Step(tool_calls=[("Read", {"file_path": str(outside)})]),
            Step(text="read what I could"),
        )

        events, _ = await session.turn("read both")
    finally:
        await session.client.disconnect()

    completed = [data for kind, data in events if kind == "tool_call.completed"]
    assert [c["name"] for c in completed] == ["Read", "Read"]
    assert completed[0]["is_error"] is False
    assert "inside the session folder" in completed[0]["result"]
    assert completed[1]["is_error"] is True
    assert "outside the session folder" not in completed[1]["result"]
    assert [v.outcome for _, _, v in recorder.verdicts] == ["allow", "deny"]
    assert [d.rule_id for _, d in recorder.decisions] == [None, "outside_workdir"]
    sent = str(anthropic.loop_requests()[-1]["messages"])
    assert "outside the session folder" not in sent
