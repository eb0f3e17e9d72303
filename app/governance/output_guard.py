"""The `output` point on a streaming reply: deltas in, text that may be sent out.

A reply streams, and a secret can arrive split across deltas, so the guard keeps an unreleased
tail: everything but its last `holdback` characters is released at once, except that a match
which still reaches into the tail is held whole (it could still grow). `holdback` is the longest
window of the rules in force, at most `OUTPUT_GUARD_HOLDBACK_CHARS`; only the tail (at most that,
plus the newest delta) is scanned again per delta. A match longer than the holdback is decided
when it is seen (docs/decisions.md, "Guardrails on outputs").

A `deny` match stops the guard: nothing more is released, the text already released stays. A rule
that cannot be evaluated (a pattern RE2 refuses, text it cannot read) denies, like every point.
"""

from __future__ import annotations

from collections import Counter

from app.governance.policy import Decision
from app.governance.screening import Hit, Screen, TextRule, redacted

GUARDRAIL_BLOCKED = "guardrail_blocked"
"""The error code of a turn an `output` deny ended."""


def blocked_reason(decision: Decision) -> str:
    return decision.reason or f"the reply was blocked by policy {decision.rule_id}"


class OutputGuard:
    def __init__(self, screen: Screen, *, holdback: int) -> None:
        self._screen = screen
        window = screen.window
        self.holdback = holdback if window is None else min(holdback, window)
        self._tail = ""
        self._released: list[str] = []
        self._counts: Counter[TextRule] = Counter()
        self.blocked: Decision | None = None
        """The deny that stopped the reply; None while it may go on."""

    @property
    def text(self) -> str:
        """Everything released so far: what the reply is, for the client, the log and the conversation."""
        return "".join(self._released)

    @property
    def held(self) -> int:
        return len(self._tail)

    def feed(self, delta: str) -> str:
        """The text `delta` lets go now ('' while it is held, and once the reply is blocked)."""
        if self.blocked is not None:
            return ""
        self._tail += delta
        return self._release(final=False)

    def finish(self) -> str:
        """The rest at the end of the call, judged as complete."""
        if self.blocked is not None:
            return ""
        return self._release(final=True)

    def decisions(self) -> list[Decision]:
        """The receipts of the rules that acted on the released text, and the deny that stopped it."""
        acted = self._screen.decisions(self._counts)
        return [*acted, self.blocked] if self.blocked is not None else acted

    def _release(self, *, final: bool) -> str:
        tail = self._tail
        try:
            hits = self._screen.hits(tail)
        except Exception as exc:
            return self._block(self._screen.engine_error(exc))
        cut, decided = self._decided(tail, hits, final=final)
        denied = next((hit for hit in decided if hit.rule.rule.verdict == "deny"), None)
        if denied is not None:
            return self._block(self._screen.decision(denied.rule, 1))
        self._counts.update(hit.rule for hit in decided)
        out = redacted(tail[:cut], decided)
        self._tail = tail[cut:]
        if out:
            self._released.append(out)
        return out

    def _decided(self, tail: str, hits: list[Hit], *, final: bool) -> tuple[int, list[Hit]]:
        """Where the release stops, and the hits before it (a hit reaching past it holds it back whole,
        unless that would hold back more than `holdback`)."""
        cut = len(tail) if final else max(0, len(tail) - self.holdback)
        decided: list[Hit] = []
        for hit in hits:
            if hit.start >= cut:
                break
            if hit.end > cut:
                if len(tail) - hit.start <= self.holdback:
                    return hit.start, decided
                cut = hit.end
            decided.append(hit)
        return cut, decided

    def _block(self, decision: Decision) -> str:
        self.blocked = decision
        self._tail = ""
        return ""
