"""The gate's order — known, confinement, blacklist, skip-done, policy — on real policy reads, without Claude Code."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from app.claude_sdk.gate import ToolGate, Verdict
from app.claude_sdk.surface import ToolSurface
from app.core.sql import Sql
from app.governance.gate import Governance
from app.governance.policy import Decision
from app.tools.base import ToolResult
from app.tools.builtin import BUILTIN_TOOLS

DENY_ECHO = {"id": "no-echo", "point": "tool", "tool": "echo", "verdict": "deny", "reason": "no echoes"}


class Recorder:
    def __init__(self, done: dict[str, ToolResult] | None = None) -> None:
        self.done = done or {}
        self.decisions: list[Decision] = []

    async def stored_result(self, tool_call_id: str) -> ToolResult | None:
        return self.done.get(tool_call_id)

    def record_decision(self, decision: Decision, *, tool_call_id: str, tool_name: str) -> None:
        self.decisions.append(decision)

    async def on_verdict(self, tool_call_id: str, name: str, arguments: dict[str, Any], verdict: Verdict) -> Verdict:
        return verdict


def gate(hot_sql: Sql, workdir: Path, recorder: Recorder, **governance: Any) -> ToolGate:
    surface = ToolSurface(served=(BUILTIN_TOOLS["echo"].spec,), native=("Read", "Glob"), workdir=workdir)
    rules = Governance(
        hot_sql,
        tenant_id=f"t-{uuid.uuid4().hex[:8]}",
        agent_rules=governance.get("rules", []),
        tool_blacklist=governance.get("blacklist", []),
    )
    return ToolGate(surface, rules, recorder)


async def test_a_tool_off_the_surface_is_denied_as_unknown(hot_sql: Sql, tmp_path: Path) -> None:
    recorder = Recorder()
    verdict = await gate(hot_sql, tmp_path, recorder).judge("Bash", {"command": "id"}, "call-1")
    assert verdict.outcome == "deny"
    assert [d.rule_id for d in recorder.decisions] == ["unknown_tool"]


async def test_the_blacklist_denies_before_the_ledger_is_read(hot_sql: Sql, tmp_path: Path) -> None:
    recorder = Recorder(done={"call-1": ToolResult("ran before")})
    verdict = await gate(hot_sql, tmp_path, recorder, blacklist=["ec*"]).judge("echo", {"text": "x"}, "call-1")
    assert verdict.outcome == "deny"
    assert [d.rule_id for d in recorder.decisions] == ["tool_blacklist"]


async def test_a_call_already_done_returns_its_stored_result_before_policy(hot_sql: Sql, tmp_path: Path) -> None:
    recorder = Recorder(done={"call-1": ToolResult("ran before")})
    verdict = await gate(hot_sql, tmp_path, recorder, rules=[DENY_ECHO]).judge("echo", {"text": "x"}, "call-1")
    assert verdict.outcome == "done"
    assert verdict.stored == ToolResult("ran before")
    assert recorder.decisions == []


def _screen_results_of(tool: str) -> dict[str, Any]:
    return {"id": f"screen-{tool}", "point": "tool_result", "tool": tool, "detect": "api_key", "verdict": "redact"}


async def test_a_claude_code_tool_whose_result_a_rule_would_screen_is_denied(hot_sql: Sql, tmp_path: Path) -> None:
    """Claude Code hands its own tools' results to the model inside the CLI: no rule could screen them."""
    recorder = Recorder()
    read = {"file_path": str(tmp_path / "notes.txt")}
    verdict = await gate(hot_sql, tmp_path, recorder, rules=[_screen_results_of("Read")]).judge("Read", read, "call-1")
    assert verdict.outcome == "deny"
    assert [(d.verdict, d.rule_id) for d in recorder.decisions] == [("deny", "result_unscreenable")]


async def test_a_result_rule_of_other_tools_or_of_our_own_tools_denies_nothing(hot_sql: Sql, tmp_path: Path) -> None:
    """Our in-process tools' results are screened before Claude Code sees them; a rule on Glob leaves Read alone."""
    rules = [_screen_results_of("Glob"), _screen_results_of("echo")]
    recorder = Recorder()
    tools = gate(hot_sql, tmp_path, recorder, rules=rules)
    assert (await tools.judge("Read", {"file_path": str(tmp_path / "notes.txt")}, "call-1")).outcome == "allow"
    assert (await tools.judge("echo", {"text": "x"}, "call-2")).outcome == "allow"


async def test_policy_decides_the_rest_and_leaves_a_receipt(hot_sql: Sql, tmp_path: Path) -> None:
    recorder = Recorder()
    verdict = await gate(hot_sql, tmp_path, recorder, rules=[DENY_ECHO]).judge("echo", {"text": "x"}, "call-1")
    assert verdict.outcome == "deny"
    assert verdict.message == "denied by policy: no echoes"
    assert [(d.verdict, d.rule_id) for d in recorder.decisions] == [("deny", "no-echo")]


@pytest.mark.parametrize(
    "arguments",
    [
        {"file_path": "/etc/hostname"},
        {"file_path": "../outside.txt"},
        {"file_path": "~/.bashrc"},
        {"file_path": "link/secret.txt"},
    ],
)
async def test_a_native_tool_may_not_leave_the_working_directory(
    hot_sql: Sql, tmp_path: Path, arguments: dict[str, Any]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (work / "link").symlink_to(tmp_path / "elsewhere")
    recorder = Recorder()
    verdict = await gate(hot_sql, work, recorder).judge("Read", arguments, "call-1")
    assert verdict.outcome == "deny"
    assert [d.rule_id for d in recorder.decisions] == ["outside_workdir"]


@pytest.mark.parametrize(
    ("name", "arguments", "outcome"),
    [
        ("Read", {"file_path": "notes.txt"}, "allow"),
        ("Glob", {"pattern": "**/*.py"}, "allow"),
        ("Glob", {"pattern": "/etc/*"}, "deny"),
        ("Glob", {"pattern": "../*"}, "deny"),
    ],
)
async def test_paths_inside_the_working_directory_pass_and_escaping_globs_do_not(
    hot_sql: Sql, tmp_path: Path, name: str, arguments: dict[str, Any], outcome: str
) -> None:
    verdict = await gate(hot_sql, tmp_path, Recorder()).judge(name, arguments, "call-1")
    assert verdict.outcome == outcome
