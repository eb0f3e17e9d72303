"""Small LLM servers on loopback that speak each provider's wire format, for end-to-end turns.

One scripted conversation for all three: the first call (no tool result in the request yet) says
"Let me compute." and asks for `calculator {"expression": "6*7"}` (OpenAI: arguments in fragments);
a call that carries a tool result answers "The answer is 42.". Each server keeps every request it
received (path, headers, JSON body), and can be told to fail with a status and a body instead.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.providers import gemini_wire, openai_wire

FIRST_TEXT = "Let me compute."
FINAL_TEXT = "The answer is 42."
TOOL_ARGS = {"expression": "6*7"}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class LlmServer:
    requests: list[Received] = field(default_factory=list)
    fail_with: tuple[int, dict[str, Any]] | None = None
    url: str = ""


Answer = Callable[[dict[str, Any], bool], list[bytes]]
"""(request body, has a tool result) → the SSE frames of the reply."""


def _openai(body: dict[str, Any], answered: bool) -> list[bytes]:
    if answered:
        chunks = [*openai_wire.text_chunks("The answer", " is 42."), openai_wire.chunk(finish="stop")]
    else:
        chunks = [
            *openai_wire.text_chunks("Let me", " compute."),
            openai_wire.tool_fragment(0, call_id="call_calc_1", name="calculator"),
            openai_wire.tool_fragment(0, args='{"expres'),
            openai_wire.tool_fragment(0, args='sion": "6'),
            openai_wire.tool_fragment(0, args='*7"}'),
            openai_wire.chunk(finish="tool_calls"),
        ]
    chunks.append(openai_wire.usage_chunk(25, 9))
    return [openai_wire.sse(chunks)]


def _gemini(body: dict[str, Any], answered: bool) -> list[bytes]:
    if answered:
        chunks = [gemini_wire.chunk(gemini_wire.text("The answer")), gemini_wire.chunk(gemini_wire.text(" is 42."))]
    else:
        chunks = [
            gemini_wire.chunk(gemini_wire.text("Let me compute.")),
            gemini_wire.chunk(gemini_wire.call("calculator", TOOL_ARGS, "fc_calc_1", "c2lnbmF0dXJl")),
        ]
    chunks.append(gemini_wire.chunk(finish="STOP", usage=(25, 9)))
    return [gemini_wire.sse(chunks)]


def _anthropic_event(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _anthropic(body: dict[str, Any], answered: bool) -> list[bytes]:
    return anthropic_reply(body, FINAL_TEXT if answered else FIRST_TEXT, None if answered else TOOL_ARGS)


def anthropic_reply(
    body: dict[str, Any],
    text: str,
    calculator: dict[str, Any] | None,
    *,
    call_id: str = "toolu_calc_1",
    tool: str = "calculator",
) -> list[bytes]:
    """An Anthropic Messages stream: `text`, then a `tool` call (`call_id`) with these arguments if given."""
    answered = calculator is None
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"), "content": [],
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 25, "output_tokens": 1}}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},  # fmt: skip
        {"type": "content_block_stop", "index": 0},
    ]
    if not answered:
        events += [
            {"type": "content_block_start", "index": 1,
             "content_block": {"type": "tool_use", "id": call_id, "name": tool, "input": {}}},
            {"type": "content_block_delta", "index": 1,
             "delta": {"type": "input_json_delta", "partial_json": json.dumps(calculator)}},
            {"type": "content_block_stop", "index": 1},
        ]  # fmt: skip
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn" if answered else "tool_use",
                                            "stop_sequence": None}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return [_anthropic_event(e) for e in events]


def _has_tool_result(body: dict[str, Any]) -> bool:
    text = json.dumps(body)
    return '"role": "tool"' in text or "functionResponse" in text or '"tool_result"' in text


def _app(server: LlmServer, answer: Answer, paths: list[str]) -> Starlette:
    async def handle(request: Request) -> Response:
        body = await request.json()
        server.requests.append(Received(request.url.path, dict(request.headers), body))
        if server.fail_with is not None:
            status, error = server.fail_with
            return JSONResponse(error, status_code=status)
        frames = answer(body, _has_tool_result(body))

        async def stream() -> AsyncIterator[bytes]:
            for frame in frames:
                yield frame

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route(path, handle, methods=["POST"]) for path in paths])


WIRE: dict[str, tuple[Answer, list[str], str]] = {
    "openai": (_openai, ["/v1/chat/completions"], "/v1"),
    "gemini": (_gemini, ["/v1/models/{model}:streamGenerateContent"], ""),
    "anthropic": (_anthropic, ["/v1/messages"], ""),
}
"""Provider → (answer, routes, the suffix of the base URL a credential names)."""


@asynccontextmanager
async def llm_server(provider: str, answer_with: Answer | None = None) -> AsyncIterator[LlmServer]:
    """A loopback server for `provider`; `answer_with` replaces its scripted conversation."""
    answer, paths, suffix = WIRE[provider]
    answer = answer_with or answer
    server = LlmServer()
    config = uvicorn.Config(_app(server, answer, paths), host="127.0.0.1", port=0, log_level="warning")
    runner = uvicorn.Server(config)
    task = asyncio.create_task(runner.serve())
    try:
        async with asyncio.timeout(30):
            while not runner.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        port = runner.servers[0].sockets[0].getsockname()[1]
        server.url = f"http://127.0.0.1:{port}{suffix}"
        yield server
    finally:
        runner.should_exit = True
        await task
