"""Idempotency keys for tool executions (DESIGN.md "The loop", step 7; docs/decisions.md "A tool call's identity")."""

from __future__ import annotations

import hashlib


def idempotency_key(session_id: str, turn_id: str, tool_call_id: str) -> str:
    """Hex sha256 of `session_id:turn_id:tool_call_id`: one logical call, the same key in every run of its turn."""
    return hashlib.sha256(f"{session_id}:{turn_id}:{tool_call_id}".encode()).hexdigest()
