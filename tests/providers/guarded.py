"""One secret split across a provider's text deltas, run through the output guard, and the checks that
no delta the journal keeps holds a byte of it (used with every provider's real SDK)."""

from __future__ import annotations

from app.governance.budget import Budget, Spent
from app.governance.policy import PolicySet, parse_rules
from app.graph.governed_call import Answered, CallGovernance, governed_call
from app.providers.base import ModelRequest, Provider
from app.runtime.port.events import MessageCompleted, MessageDelta
from tests.graph.memory import FixedGovernance, MemoryJournal

KEY = "AKIAIOSFODNN7EXAMPLE"
CHUNKS = ["Use AKI", "AIOSFO", "DNN7EXA", "MPLE to sign in."]
GUARDED = "Use [REDACTED:api_key] to sign in."
REDACT_KEYS = {"id": "keys", "point": "output", "detect": "api_key", "verdict": "redact"}


async def guarded_reply(provider: Provider, request: ModelRequest) -> None:
    """Run one governed call of `request` under a redact rule for API keys and check what it kept."""
    journal = MemoryJournal()
    policy = PolicySet(agent_rules=parse_rules([REDACT_KEYS]))
    governance = CallGovernance(Budget(1000, None), Spent(0, 0, 0), None, FixedGovernance(policy))

    outcome = await governed_call(request, governance, provider=provider, journal=journal, kind="model")

    assert isinstance(outcome, Answered)
    assert outcome.response.text == outcome.message.content == GUARDED
    deltas = [e.text for e in journal.events if isinstance(e, MessageDelta)]
    assert "".join(deltas) == GUARDED
    assert not any(KEY[i : i + 4] in delta for delta in deltas for i in range(len(KEY) - 3))
    assert [e.text for e in journal.events if isinstance(e, MessageCompleted)] == [GUARDED]
    receipts = [(d.point, d.verdict, d.detector, d.match_count) for d, _, _ in journal.receipts]
    assert receipts == [("output", "redact", "api_key", 1)]
