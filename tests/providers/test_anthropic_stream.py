"""Folding raw Messages events: text, tool calls with chunked JSON, usage, and malformed arguments."""

from __future__ import annotations

import pytest
from anthropic.types import (
    InputJSONDelta,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    TextDelta,
    ToolUseBlock,
)

from app.providers.anthropic_stream import MessageAccumulator
from app.providers.base import ProviderError


def _tool_start(index: int) -> RawContentBlockStartEvent:
    block = ToolUseBlock(type="tool_use", id=f"toolu_{index}", name="echo", input={})
    return RawContentBlockStartEvent(type="content_block_start", index=index, content_block=block)


def _json(index: int, part: str) -> RawContentBlockDeltaEvent:
    delta = InputJSONDelta(type="input_json_delta", partial_json=part)
    return RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=delta)


def test_text_deltas_are_returned_and_tool_json_is_joined_in_block_order() -> None:
    acc = MessageAccumulator()
    text = RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=TextDelta(type="text_delta", text="hi"))
    assert acc.add(text) == "hi"
    for event in [_tool_start(2), _json(2, '{"text": '), _tool_start(1), _json(1, "{}"), _json(2, '"b"}')]:
        assert acc.add(event) is None
    response = acc.response()
    assert response.text == "hi"
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("toolu_1", {}), ("toolu_2", {"text": "b"})]


def test_malformed_tool_arguments_are_a_provider_error() -> None:
    acc = MessageAccumulator()
    acc.add(_tool_start(0))
    acc.add(_json(0, '{"text": '))
    with pytest.raises(ProviderError) as caught:
        acc.response()
    assert caught.value.code == "provider_error"
