"""Every provider's stream passes the same output guard: the real Anthropic SDK and its SSE parsing,
a secret split across its text deltas, and no delta the journal keeps holds a byte of it."""

from __future__ import annotations

from app.governance.budget import Budget, Spent
from app.governance.policy import PolicySet, parse_rules
from app.graph.governed_call import Answered, CallGovernance, governed_call
from app.providers.anthropic import AnthropicProvider
from app.providers.base import ChatMessage
from app.runtime.port.events import MessageCompleted, MessageDelta
from tests.graph.memory import FixedGovernance, MemoryJournal
from tests.providers.test_anthropic_provider import (
    FakeAnthropicApi,
    api,
    message_end,
    message_start,
    model_request,
    provider,
    stream_response,
    text_block,
)

__all__ = ["api", "provider"]

KEY = "AKIAIOSFODNN7EXAMPLE"
CHUNKS = ["Use AKI", "AIOSFO", "DNN7EXA", "MPLE to sign in."]
REDACT_KEYS = {"id": "keys", "point": "output", "detect": "api_key", "verdict": "redact"}


async def test_an_anthropic_stream_is_guarded_like_any_other(
    api: FakeAnthropicApi, provider: AnthropicProvider
) -> None:
    api.responses.append(stream_response(message_start(), *text_block(0, CHUNKS), *message_end("end_turn", 9)))
    journal = MemoryJournal()
    policy = PolicySet(agent_rules=parse_rules([REDACT_KEYS]))
    governance = CallGovernance(Budget(1000, None), Spent(0, 0, 0), None, FixedGovernance(policy))
    request = model_request([ChatMessage(role="user", content="how do I sign in?")])

    outcome = await governed_call(request, governance, provider=provider, journal=journal, kind="model")

    assert isinstance(outcome, Answered)
    guarded = "Use [REDACTED:api_key] to sign in."
    assert outcome.response.text == outcome.message.content == guarded
    deltas = [e.text for e in journal.events if isinstance(e, MessageDelta)]
    assert "".join(deltas) == guarded
    assert not any(KEY[i : i + 4] in delta for delta in deltas for i in range(len(KEY) - 3))
    assert [e.text for e in journal.events if isinstance(e, MessageCompleted)] == [guarded]
    receipts = [(d.point, d.verdict, d.detector, d.match_count) for d, _, _ in journal.receipts]
    assert receipts == [("output", "redact", "api_key", 1)]
