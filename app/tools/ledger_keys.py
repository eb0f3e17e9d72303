"""Idempotency keys for tool executions (DESIGN.md "The loop", step 7)."""

from __future__ import annotations

import hashlib


def idempotency_key(session_id: str, loop: int, tool_call_id: str) -> str:
    """Hex sha256 of `session_id:loop:tool_call_id`: stable across replays of the same call."""
    return hashlib.sha256(f"{session_id}:{loop}:{tool_call_id}".encode()).hexdigest()
