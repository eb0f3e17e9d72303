"""Tool results answered from a recording: what an eval with `tools: "recorded"` runs on (app/evals).

The turn sees the agent's tools as usual (the same specs, the same policy gate), but no call ever
leaves the service: a call whose name and canonical arguments match a recorded call gets that
call's recorded result; any other call is refused with a receipt (`eval_unrecorded_tool`) and the
model sees an error result. The recording travels in the session's snapshot under `recorded_tools`,
so a resumed or continued turn answers from the same recording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.governance.canonical import canonical_json
from app.governance.policy import Decision
from app.providers.base import ToolCall
from app.tools.base import ToolResult

RECORDED_KEY = "recorded_tools"
UNRECORDED_RULE_ID = "eval_unrecorded_tool"


def _key(name: str, arguments: Mapping[str, Any]) -> str:
    return f"{name}\x00{canonical_json(dict(arguments))}"


class Recording:
    """`[{"name", "arguments", "result", "is_error"}]`, looked up by name and canonical arguments."""

    def __init__(self, calls: Sequence[Mapping[str, Any]]) -> None:
        self._results = {
            _key(str(c["name"]), c.get("arguments") or {}): ToolResult(
                str(c.get("result", "")), bool(c.get("is_error"))
            )
            for c in calls
        }  # fmt: skip

    @classmethod
    def of(cls, snapshot: Mapping[str, Any]) -> Recording | None:
        calls = snapshot.get(RECORDED_KEY)
        return None if calls is None else cls(calls)

    def result(self, call: ToolCall) -> ToolResult | None:
        return self._results.get(_key(call.name, call.arguments))

    def refusal(self, call: ToolCall, policy_hash: str) -> Decision | None:
        if self.result(call) is not None:
            return None
        reason = f"no recorded result for {call.name} with these arguments: an eval never runs a tool"
        return Decision("tool", "deny", UNRECORDED_RULE_ID, reason, policy_hash)


def agent_config_of(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot as an agent's configuration (without the recording an eval session adds)."""
    return {k: v for k, v in snapshot.items() if k != RECORDED_KEY}
