"""The `output` point on the Claude SDK runtime: the same guard as the loop's (app/governance/output_guard.py)
between Claude Code's text deltas and our event log.

One `ReplyGuard` per model call, made when the call opens and only when an `output` rule is in force
(or the rules cannot be read: then it lets no text through). It turns the mapper's `message.delta`
and `message.completed` events into the guarded ones and records the receipts of the rules that
acted, once: when the reply completes, or when a deny stops it.
"""

from __future__ import annotations

from typing import Any

from app.governance.output_guard import OutputGuard
from app.governance.policy import Decision
from app.runtime.port.journal import TurnJournal

Event = tuple[str, dict[str, Any]]


class ReplyGuard:
    def __init__(self, guard: OutputGuard | Decision, journal: TurnJournal) -> None:
        self._journal = journal
        self._settled = isinstance(guard, Decision)
        self._guard = guard if isinstance(guard, OutputGuard) else None
        self._refused = guard if isinstance(guard, Decision) else None
        if self._refused is not None:
            journal.decision(self._refused)

    @property
    def text(self) -> str:
        """The reply as released: what the conversation and `final_output` keep."""
        return "" if self._guard is None else self._guard.text

    @property
    def blocked(self) -> Decision | None:
        return self._refused if self._guard is None else self._guard.blocked

    def events(self, kind: str, data: dict[str, Any]) -> list[Event]:
        """The guarded form of one mapped event (text events only; others pass unchanged)."""
        if kind not in ("message.delta", "message.completed"):
            return [(kind, data)]
        if self._guard is None:
            return []
        if kind == "message.delta":
            released = self._guard.feed(data["text"])
            if self._guard.blocked is not None:
                self._settle()
            return [("message.delta", {"text": released})] if released else []
        rest = self._guard.finish()
        self._settle()
        if self._guard.blocked is not None:
            return []
        tail: list[Event] = [("message.delta", {"text": rest})] if rest else []
        return [*tail, ("message.completed", {**data, "text": self._guard.text})]

    def _settle(self) -> None:
        if self._settled or self._guard is None:
            return
        self._settled = True
        for decision in self._guard.decisions():
            self._journal.decision(decision)
