"""A reply whose chunks arrive together (one read holds them all) still ships its first token at once:
after a call's first delta the governed call gives the event loop up, so the turn's followers can
send it before the SDK has parsed the rest. The real OpenAI SDK parses the burst (HTTP mocked with
respx); a ticker task counts the loop's turns while it does."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
import respx

from app.governance.budget import Budget, Spent
from app.governance.policy import PolicySet, parse_rules
from app.graph.governed_call import Answered, CallGovernance, governed_call
from app.providers.clients import ClientOptions, Endpoint, ProviderClients
from app.runtime.port.events import EventBody, MessageDelta
from tests.graph.memory import FixedGovernance, MemoryJournal
from tests.providers import openai_wire
from tests.providers.guarded import REDACT_KEYS
from tests.providers.kit import chat_request, event_stream

OPENAI_URL = "https://llm.example.test/v1"
WORDS = [f"word{i} " for i in range(40)]


@dataclasses.dataclass
class TickingJournal(MemoryJournal):
    """Notes, for each delta, how often the ticker had run when it was recorded."""

    ticks: int = 0
    ticks_at_delta: list[int] = dataclasses.field(default_factory=list)

    def event(self, event: EventBody) -> int:
        if isinstance(event, MessageDelta):
            self.ticks_at_delta.append(self.ticks)
        return super().event(event)


async def _tick(journal: TickingJournal) -> None:
    while True:
        journal.ticks += 1
        await asyncio.sleep(0)


@pytest.mark.parametrize("guarded", [False, True], ids=["plain", "output-guard"])
@respx.mock
async def test_the_loop_runs_between_the_first_delta_and_the_rest_of_a_burst(guarded: bool) -> None:
    chunks = [*openai_wire.text_chunks(*WORDS), openai_wire.chunk(finish="stop"), openai_wire.usage_chunk(9, 40)]
    respx.post(f"{OPENAI_URL}/chat/completions").mock(return_value=event_stream(openai_wire.sse(chunks)))
    clients = ProviderClients({"openai": ClientOptions(timeout_seconds=5.0, max_retries=0)})
    journal = TickingJournal()
    policy = PolicySet(agent_rules=parse_rules([REDACT_KEYS] if guarded else []))
    governance = CallGovernance(Budget(1000, None), Spent(0, 0, 0), None, FixedGovernance(policy))
    ticker = asyncio.create_task(_tick(journal))
    try:
        provider = clients.provider(Endpoint("openai", "sk-test", OPENAI_URL))
        request = chat_request({"provider": "openai", "name": openai_wire.MODEL}, max_tokens=256)
        outcome = await governed_call(request, governance, provider=provider, journal=journal, kind="model")
    finally:
        ticker.cancel()
        await clients.aclose()

    assert isinstance(outcome, Answered)
    assert outcome.response.text == "".join(WORDS)
    first, second = journal.ticks_at_delta[:2]
    assert second > first, "the loop did not run after the first delta"
