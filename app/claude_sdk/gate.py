"""Our governance in front of every tool call Claude Code makes: known → blacklist → skip-done → policy.

The SDK asks twice, and both questions come here:
- the `PreToolUse` hook fires for every call, whatever Claude Code's own permission rules say, so it
  is where the decision is made; an allow answers "no opinion" rather than "allow", because a hook's
  allow would also waive Claude Code's own checks (a file tool reaching outside its directory);
- `can_use_tool` is asked only when Claude Code would prompt a user. It allows what the hook already
  judged, except a request Claude Code raised because a path lies outside the session's working
  directory (`blocked_path`): that is refused, which is what confines `claude:` tools.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol

from claude_agent_sdk import HookContext, PermissionResultAllow, PermissionResultDeny
from claude_agent_sdk.types import HookInput, PermissionResult, SyncHookJSONOutput, ToolPermissionContext

from app.claude_sdk.surface import ToolSurface, plain_name
from app.governance.gate import Governance
from app.governance.policy import Decision, PolicySet, blacklist_decision, decide_tool
from app.governance.screening import screen_of
from app.tools.base import ToolResult

UNKNOWN_TOOL_RULE_ID = "unknown_tool"
OUTSIDE_WORKDIR_RULE_ID = "outside_workdir"
UNSCREENABLE_RULE_ID = "result_unscreenable"

Outcome = Literal["allow", "deny", "done", "requires_approval", "held"]
"""`held`: the turn stops before this call (an earlier call waits for a human, or a limit is reached)."""
STOPS: frozenset[Outcome] = frozenset({"requires_approval", "held"})


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    decision: Decision | None = None
    """The receipt behind a deny or a requires_approval (None for a plain allow or a call already done)."""
    stored: ToolResult | None = None
    """For `done`: the result the ledger keeps; the call is not made again."""

    @property
    def message(self) -> str:
        if self.stored is not None:
            return f"this call already ran; its result: {self.stored.content}"
        if self.outcome == "requires_approval":
            return "this call waits for a human's approval"
        if self.outcome == "held":
            return "this call waits: the turn stops before it"
        if self.decision is None:
            return ""
        return f"denied by policy: {self.decision.reason or f'rule {self.decision.rule_id}'}"


class GateRecorder(Protocol):
    """What the gate needs from the turn: the ledger, receipts, and who asks next."""

    async def stored_result(self, tool_call_id: str) -> ToolResult | None: ...

    def record_decision(self, decision: Decision, *, tool_call_id: str, tool_name: str) -> None: ...

    async def on_verdict(self, tool_call_id: str, name: str, arguments: dict[str, Any], verdict: Verdict) -> Verdict:
        """Called once per call with the gate's verdict; returns the one that stands (the turn may hold it)."""
        ...


class ToolGate:
    def __init__(self, surface: ToolSurface, governance: Governance, recorder: GateRecorder) -> None:
        self._surface = surface
        self._governance = governance
        self._recorder = recorder

    async def judge(self, name: str, arguments: dict[str, Any], tool_call_id: str) -> Verdict:
        policy = await self._governance.current("tool")
        if not self._surface.known(name):
            return self._decided(_unknown(name, policy), tool_call_id, name)
        outside = self._surface.escapes(name, arguments)
        if outside is not None:
            reason = f"{outside} is outside this session's working directory"
            escape = Decision("tool", "deny", OUTSIDE_WORKDIR_RULE_ID, reason, policy.policy_hash)
            return self._decided(escape, tool_call_id, name)
        if isinstance(policy, PolicySet):
            blacklisted = blacklist_decision(policy, name)
            if blacklisted is not None:
                return self._decided(blacklisted, tool_call_id, name)
        stored = await self._recorder.stored_result(tool_call_id)
        if stored is not None:
            return Verdict("done", stored=stored)
        if isinstance(policy, Decision):  # the set could not be read: fail closed
            return self._decided(policy, tool_call_id, name)
        decision = decide_tool(policy, name, arguments)
        if decision.verdict != "deny" and self._surface.is_native(name):
            decision = _unscreenable(policy, name) or decision
        return self._decided(decision, tool_call_id, name)

    async def refused_unknown(self, name: str, tool_call_id: str) -> Verdict:
        """The receipt of a call Claude Code refused itself, before any hook: a name it does not offer."""
        return self._decided(_unknown(name, await self._governance.current("tool")), tool_call_id, name)

    def _decided(self, decision: Decision, tool_call_id: str, name: str) -> Verdict:
        self._recorder.record_decision(decision, tool_call_id=tool_call_id, tool_name=name)
        outcome: Outcome = "allow"
        if decision.verdict == "deny" or decision.verdict == "requires_approval":
            outcome = decision.verdict
        return Verdict(outcome, decision=decision)

    async def pre_tool_use(self, data: HookInput, tool_use_id: str | None, context: HookContext) -> SyncHookJSONOutput:
        """The `PreToolUse` hook: judge, tell the turn, answer Claude Code."""
        if data["hook_event_name"] != "PreToolUse":
            return {}
        name, arguments = plain_name(data["tool_name"]), dict(data["tool_input"])
        call_id = tool_use_id or data["tool_use_id"]
        verdict = await self._recorder.on_verdict(call_id, name, arguments, await self.judge(name, arguments, call_id))
        if verdict.outcome == "allow" or (verdict.outcome == "done" and not self._surface.is_native(name)):
            return {}  # an in-process tool answers a call already done from the ledger itself
        output: SyncHookJSONOutput = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": verdict.message,
            }
        }
        if verdict.outcome in STOPS:
            output["continue_"] = False
            output["stopReason"] = verdict.message
        return output

    async def can_use_tool(
        self, name: str, arguments: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        """Claude Code's prompt: the hook has judged the call; refuse only what leaves the working directory."""
        if context.blocked_path is not None:
            return PermissionResultDeny(message=f"{context.blocked_path} is outside this session's working directory")
        return PermissionResultAllow()


def _unknown(name: str, policy: PolicySet | Decision) -> Decision:
    return Decision("tool", "deny", UNKNOWN_TOOL_RULE_ID, f"unknown tool {name!r}", policy.policy_hash)


def _unscreenable(policy: PolicySet, name: str) -> Decision | None:
    """The deny of a Claude Code tool whose result a `tool_result` rule takes: its result reaches the
    model inside the CLI, where no rule can screen it, so the call does not run (fail closed)."""
    if screen_of(policy, "tool_result", tool_name=name) is None:
        return None
    reason = f"a tool_result rule takes the result of {name}, which Claude Code hands the model unscreened"
    return Decision("tool", "deny", UNSCREENABLE_RULE_ID, reason, policy.policy_hash)
