from __future__ import annotations

import time
from typing import Any

import pytest

from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError, TextDelta, ToolCall
from app.providers.scripted import ScriptedProvider, split_words


def scripted_request(
    script: Any, *, call_index: int = 0, messages: list[ChatMessage] | None = None, **model: Any
) -> ModelRequest:
    return ModelRequest(
        model={"provider": "scripted", "script": script, **model},
        system="Be brief.",
        messages=messages or [ChatMessage(role="user", content="hello there")],
        tools=[],
        max_tokens=256,
        call_index=call_index,
    )


async def play(request: ModelRequest) -> tuple[list[str], ModelResponse]:
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for event in ScriptedProvider().stream(request):
        if isinstance(event, TextDelta):
            assert not final
            deltas.append(event.text)
        else:
            final.append(event)
    assert len(final) == 1
    return deltas, final[0]


@pytest.mark.parametrize(
    "text",
    ["The answer is 4.", "  leading and trailing  ", "multi\nline\n\n text", "one", "", "   ", "tab\tsep"],
)
def test_chunks_concatenate_exactly_to_the_text(text: str) -> None:
    assert "".join(split_words(text)) == text


async def test_text_streams_word_by_word_and_the_deltas_make_the_final_text() -> None:
    deltas, response = await play(scripted_request([{"text": "The answer is 4."}]))

    assert deltas == ["The ", "answer ", "is ", "4."]
    assert response.text == "The answer is 4."
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"


async def test_the_call_index_cycles_through_the_script() -> None:
    script = [{"text": "first"}, {"text": "second"}]

    texts = [(await play(scripted_request(script, call_index=i)))[1].text for i in range(5)]

    assert texts == ["first", "second", "first", "second", "first"]


async def test_a_tool_call_step_returns_calls_with_deterministic_unique_ids() -> None:
    step = {
        "text": "Computing.",
        "tool_calls": [
            {"name": "calculator", "arguments": {"expression": "2+2"}},
            {"name": "current_time"},
        ],
    }

    deltas, response = await play(scripted_request([step], call_index=3))

    assert "".join(deltas) == "Computing."
    assert response.tool_calls == [
        ToolCall(id="call_3_0", name="calculator", arguments={"expression": "2+2"}),
        ToolCall(id="call_3_1", name="current_time", arguments={}),
    ]
    assert response.stop_reason == "tool_use"


async def test_usage_counts_one_token_a_word() -> None:
    messages = [
        ChatMessage(role="user", content="what is two plus two"),
        ChatMessage(role="assistant", content="four"),
    ]
    step = {"text": "It is four.", "tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}

    _, response = await play(scripted_request([step], messages=messages))

    assert response.input_tokens == 2 + 5 + 1
    assert response.output_tokens == 3 + 1


async def test_chunk_delay_spaces_the_deltas() -> None:
    started = time.monotonic()

    deltas, _ = await play(scripted_request([{"text": "a b c"}], chunk_delay_ms=20))

    assert deltas == ["a ", "b ", "c"]
    assert time.monotonic() - started >= 0.04


@pytest.mark.parametrize(
    "model",
    [
        {"script": []},
        {"script": None},
        {"script": ["not a step"]},
        {"script": [{"text": 3}]},
        {"script": [{"tool_calls": [{"arguments": {}}]}]},
        {"script": [{"tool_calls": [{"name": "echo", "arguments": "text"}]}]},
        {"script": [{"text": "x"}], "chunk_delay_ms": -1},
    ],
)
async def test_a_malformed_script_is_a_bad_request(model: dict[str, Any]) -> None:
    request = scripted_request(model.pop("script"), **model)

    with pytest.raises(ProviderError) as caught:
        await play(request)

    assert caught.value.code == "provider_bad_request"


async def test_a_missing_script_is_a_bad_request() -> None:
    request = ModelRequest(
        model={"provider": "scripted"}, system="", messages=[], tools=[], max_tokens=10, call_index=0
    )

    with pytest.raises(ProviderError) as caught:
        await play(request)

    assert caught.value.code == "provider_bad_request"
