"""Receipts that are not a rule's verdict: a human's decision, and a tool name nobody offered.

Pure, like app/governance/policy.py: inputs in, a `Decision` (the receipt's content) out.
"""

from __future__ import annotations

from typing import Any

from app.governance.policy import Decision, arguments_hash

UNKNOWN_TOOL_RULE_ID = "unknown_tool"


def unknown_tool(name: str, policy_hash: str) -> Decision:
    """A name that is neither a built-in of the agent nor returned by this turn's MCP discovery.

    Such a call never leaves the service (a model must not reach a gateway tool by guessing its name).
    """
    reason = f"{name!r} is not a tool of this agent"
    return Decision("tool", "deny", UNKNOWN_TOOL_RULE_ID, reason, policy_hash)


def human(
    *,
    approve: bool,
    decided_by: str | None,
    reason: str | None,
    rule_id: str | None,
    seen: dict[str, Any],
    edited: dict[str, Any] | None,
    policy_hash: str,
) -> Decision:
    """A human's approve or deny of a gated call: who, why, and what they saw (and what ran, if edited)."""
    return Decision(
        "human",
        "approve" if approve else "deny",
        rule_id,
        reason,
        policy_hash,
        decided_by=decided_by,
        arguments_sha256=arguments_hash(seen),
        edited_arguments_sha256=arguments_hash(edited) if approve and edited is not None else None,
    )
