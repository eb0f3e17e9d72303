"""Claude Code's transcript of a session, read to find where a stopped or lost turn goes on from.

The transcript is a JSONL file of entries; the conversation's entries (`user`, `assistant`,
attachments …) carry a `uuid` and the `parentUuid` of the entry before them. A resume at an entry
(`resume_session_at`) leaves the entries after it in the file, on a dead branch, and Claude Code
writes one entry per content block of a reply (a tool result may sit between two `tool_use` entries
of one reply), so the file's order means little: everything here follows the parent chain.

Prompts we send carry a uuid of our own (`prompt_uuid`), derived from the turn, the text and an
attempt number: a continuation finds the prompt a lost run sent, resumes at the entry before it
and sends it again under the next attempt's uuid (Claude Code ignores a message whose uuid its
transcript already holds).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_ATTEMPTS = 32
"""How often one prompt may be sent again (a turn continued that many times fails instead)."""


def prompt_uuid(turn_id: uuid.UUID, text: str, attempt: int) -> str:
    return str(uuid.uuid5(turn_id, f"prompt:{attempt}:{text}"))


@dataclass(frozen=True, slots=True)
class PromptEntry:
    attempt: int
    parent: str | None
    """The entry before the prompt: where a resume that makes the prompt's model call again starts."""


@dataclass(frozen=True, slots=True)
class BatchPoint:
    entry: str
    """The entry holding the batch's last `tool_use`: where the resume starts."""
    answered: frozenset[str]
    """Calls of the batch whose `tool_result` Claude Code already holds before that entry."""


@dataclass(frozen=True, slots=True)
class Transcript:
    entries: dict[str, dict[str, Any]]
    """Conversation entries by uuid (the last one written wins)."""

    @classmethod
    def read(cls, paths: Iterable[Path]) -> Transcript:
        """Blocking I/O: call it in a thread."""
        entries: dict[str, dict[str, Any]] = {}
        for path in paths:
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    entry = _parsed(line)
                    if entry is not None and isinstance(entry.get("uuid"), str):
                        entries[entry["uuid"]] = entry
        return cls(entries)

    def prompt(self, turn_id: uuid.UUID, text: str) -> PromptEntry | None:
        """The latest attempt of this turn's prompt `text` that Claude Code recorded, if any."""
        found = None
        for attempt in range(MAX_ATTEMPTS):
            entry = self.entries.get(prompt_uuid(turn_id, text, attempt))
            if entry is not None:
                found = PromptEntry(attempt, entry.get("parentUuid"))
        return found

    def batch(self, calls: Sequence[str]) -> BatchPoint | None:
        """Where a batch of tool calls (in the reply's order) continues; None if the reply is not recorded."""
        last = self._holding(calls[-1])
        if last is None:
            return None
        first = self._holding(calls[0])
        answered: set[str] = set()
        wanted = set(calls)
        current: str | None = last
        while current is not None and current in self.entries:
            entry = self.entries[current]
            answered |= wanted & _tool_results(entry)
            if current == first:
                break
            current = entry.get("parentUuid")
        return BatchPoint(last, frozenset(answered))

    def _holding(self, tool_use_id: str) -> str | None:
        for key, entry in self.entries.items():
            if entry.get("type") == "assistant" and tool_use_id in _blocks(entry, "tool_use", "id"):
                return key
        return None


def _parsed(line: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None  # a line cut short when the process died
    return entry if isinstance(entry, dict) else None


def _blocks(entry: dict[str, Any], kind: str, field: str) -> set[str]:
    content = (entry.get("message") or {}).get("content")
    blocks = content if isinstance(content, list) else []
    return {str(b.get(field)) for b in blocks if isinstance(b, dict) and b.get("type") == kind}


def _tool_results(entry: dict[str, Any]) -> set[str]:
    return _blocks(entry, "tool_result", "tool_use_id") if entry.get("type") == "user" else set()
