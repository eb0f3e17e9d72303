"""assemble_context with the built-in context past its trigger: summarise, fall back to the window, clip."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from app.context.compaction import SUMMARY_LABEL, SUMMARY_SYSTEM_PROMPT, StoredSummary, prompt_tokens
from app.graph.nodes.context_nodes import assemble_context
from app.graph.state import TurnState
from app.providers.base import ChatMessage, ModelRequest, ProviderError, ProviderEvent, ToolCall
from app.providers.scripted import ScriptedProvider
from tests.graph.memory import MemoryJournal, node_runtime

WINDOW = 1024
TRIGGER = 204
COMPACTION = {"strategy": "summarize", "trigger_ratio": 0.2, "keep_last_messages": 2}
"""A message of `conversation` is 16 tokens: eight exchanges (256) pass the trigger, six (192) do not."""


def state(**values: Any) -> TurnState:
    base: dict[str, Any] = {"input": "hi", "max_loops": 3, "max_output_tokens": 1000, "loop_count": 0}
    return TurnState(**{**base, **values})  # type: ignore[typeddict-item]


def conversation(exchanges: int, words: int = 10) -> list[ChatMessage]:
    messages = []
    for i in range(exchanges):
        messages.append(ChatMessage(role="user", content=f"question {i} " + "q " * words))
        messages.append(ChatMessage(role="assistant", content=f"answer {i} " + "a " * words))
    return messages


SCRIPT = [{"text": "the summary of it all"}, {"text": "reply"}]


def runtime(journal: MemoryJournal, provider: Any = None, **compaction: Any) -> Any:
    snapshot = {
        "model": {"provider": "scripted", "script": SCRIPT, "context_window": WINDOW},
        "context": {"compaction": {**COMPACTION, **compaction}},
    }
    return node_runtime(journal, script=SCRIPT, provider=provider, snapshot=snapshot)


class Recording(ScriptedProvider):
    """The scripted provider, keeping every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        async for item in super().stream(request):
            yield item


class FailsToSummarise(Recording):
    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.system == SUMMARY_SYSTEM_PROMPT:
            raise ProviderError("provider_overloaded", "busy")
        async for item in super().stream(request):
            yield item


async def test_a_conversation_under_the_trigger_is_the_prompt_and_no_summary_is_read() -> None:
    journal = MemoryJournal()
    journal.summaries.append(StoredSummary("never read", 2, 1))
    history = conversation(6)
    update = await assemble_context(state(history=history), runtime(journal))
    assert update["prompt"] == history
    assert "summary_loaded" not in update
    assert journal.of_type("context.compacted") == []


async def test_past_the_trigger_the_older_messages_are_summarised_and_stored() -> None:
    journal, provider = MemoryJournal(), Recording()
    history = conversation(8)
    update = await assemble_context(state(history=history, model_calls=6), runtime(journal, provider))

    [request] = provider.requests
    assert request.system == SUMMARY_SYSTEM_PROMPT
    assert request.tools == []
    assert request.call_index == 6
    for message in history[:14]:
        assert message.content.strip() in request.messages[0].content
    assert history[14].content.strip() not in request.messages[0].content
    [summary] = journal.summaries
    assert summary == StoredSummary(content="the summary of it all", message_count=14, model_calls=1)
    assert journal.checkpoints == 1
    assert update["prompt"][0].content == f"{SUMMARY_LABEL}\n\nthe summary of it all"
    assert update["prompt"][1:] == history[14:]
    assert update["summary"] == summary
    assert update["model_calls"] == 7
    assert update["output_tokens"] == 5
    assert update["input_tokens"] == request_words(request)
    [usage_event] = journal.of_type("usage")
    assert (usage_event.kind, usage_event.output_tokens) == ("compaction", 5)
    assert [u.kind for u in journal.usage] == ["compaction"]
    [compacted] = journal.of_type("context.compacted")
    assert (compacted.strategy, compacted.messages_before, compacted.messages_after) == ("summarize", 16, 3)
    assert compacted.tokens_after < compacted.tokens_before
    assert compacted.tokens_after == prompt_tokens("be brief", update["prompt"], "scripted")
    assert compacted.tokens_after <= TRIGGER


def request_words(request: ModelRequest) -> int:
    return len(request.system.split()) + sum(len(m.content.split()) for m in request.messages)


async def test_the_next_compaction_summarises_the_previous_summary_and_what_followed() -> None:
    journal, provider = MemoryJournal(), Recording()
    history = conversation(9)
    journal.summaries.append(StoredSummary("EARLIER-SUMMARY", 6, 2))
    update = await assemble_context(state(history=history, model_calls=8), runtime(journal, provider))

    [request] = provider.requests
    text = request.messages[0].content
    assert "<summary_so_far>\nEARLIER-SUMMARY" in text
    assert history[5].content.strip() not in text
    assert history[6].content.strip() in text
    assert request.call_index == 8 + 2
    assert journal.summaries[-1] == StoredSummary("the summary of it all", 16, 3)
    assert update["prompt"][1:] == history[16:]
    assert update["model_calls"] == 8 + 2 + 1


async def test_a_stored_summary_that_makes_the_prompt_fit_is_used_without_a_call() -> None:
    journal, provider = MemoryJournal(), Recording()
    history = conversation(8)
    journal.summaries.append(StoredSummary("EARLIER", 10, 4))
    update = await assemble_context(state(history=history, model_calls=8), runtime(journal, provider))
    assert provider.requests == []
    assert update["prompt"][1:] == history[10:]
    assert update["summary_loaded"] is True
    assert update["model_calls"] == 12
    assert journal.of_type("context.compacted") == []


async def test_a_failed_summary_falls_back_to_dropping_the_oldest_messages() -> None:
    journal, provider = MemoryJournal(), FailsToSummarise()
    history = conversation(8)
    update = await assemble_context(state(history=history), runtime(journal, provider))
    assert journal.summaries == []
    assert update["prompt"] == history[-len(update["prompt"]) :]
    assert prompt_tokens("be brief", update["prompt"], "scripted") <= TRIGGER
    [compacted] = journal.of_type("context.compacted")
    assert compacted.strategy == "window"
    assert journal.of_type("usage") == []


async def test_strategy_window_never_calls_the_model() -> None:
    journal, provider = MemoryJournal(), Recording()
    history = conversation(8)
    update = await assemble_context(state(history=history), runtime(journal, provider, strategy="window"))
    assert provider.requests == []
    assert update["prompt"] == history[-len(update["prompt"]) :]
    assert journal.of_type("context.compacted")[0].strategy == "window"


async def test_a_spent_output_budget_falls_back_to_the_window() -> None:
    journal, provider = MemoryJournal(), Recording()
    history = conversation(8)
    update = await assemble_context(
        state(history=history, max_output_tokens=50, output_tokens=50), runtime(journal, provider)
    )
    assert provider.requests == []
    assert journal.of_type("context.compacted")[0].strategy == "window"
    assert "output_tokens" not in update


async def test_a_long_tool_result_is_clipped_in_the_prompt_only() -> None:
    journal = MemoryJournal()
    call = ToolCall(id="c1", name="echo", arguments={"text": "x"})
    long_result = "data " * 500
    history = [ChatMessage(role="user", content="go")]
    this_run = [ChatMessage(role="assistant", content="", tool_calls=(call,)),
                ChatMessage(role="tool", content=long_result, tool_call_id="c1", name="echo")]  # fmt: skip
    update = await assemble_context(state(history=history, new_messages=this_run), runtime(journal))
    clipped = update["prompt"][2].content
    assert len(clipped.split()) <= WINDOW // 10
    assert "characters clipped" in clipped
    assert this_run[1].content == long_result
    assert prompt_tokens("be brief", update["prompt"], "scripted") <= TRIGGER
