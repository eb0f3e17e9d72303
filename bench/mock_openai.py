"""A loopback OpenAI-compatible server (Chat Completions), the `openai` provider's stand-in in the bench.

    python -m bench.mock_openai --port 8998 [--tokens 50] [--delay-ms 0] [--tool-mode]

`POST /v1/chat/completions` with `stream: true` answers `chat.completion.chunk` frames and `[DONE]`
(with a usage chunk when `stream_options.include_usage` asks for one), like vLLM or Ollama; each reply
has `--tokens` words, `--delay-ms` apart. With `--tool-mode`, a request that offers a function named
`echo` and ends with the user's own message gets a call of `echo` whose arguments stream in three
fragments; the request carrying its `tool` result gets text. `GET /health` for readiness.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from bench.mock_anthropic import TOOL_INPUT, TOOL_NAME, Behaviour, _prompt_tokens, _words
from bench.serving import mock_app, serve_mock

_ids = itertools.count(1)


def _wants_tool(body: dict[str, Any], behaviour: Behaviour) -> bool:
    offered = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    messages = body.get("messages") or []
    return behaviour.tool_mode and TOOL_NAME in offered and bool(messages) and messages[-1].get("role") == "user"


def _chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


class MockOpenAI:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests = 0

    async def completions(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests += 1
        if not body.get("stream"):
            return JSONResponse({"error": {"message": "this mock only streams", "type": "invalid_request_error"}}, 400)
        return StreamingResponse(self._stream(body), media_type="text/event-stream")

    async def _stream(self, body: dict[str, Any]) -> AsyncIterator[bytes]:
        completion_id, model = f"chatcmpl-mock-{next(_ids)}", str(body.get("model", "mock"))
        yield _chunk(completion_id, model, {"role": "assistant", "content": ""})
        if _wants_tool(body, self.behaviour):
            arguments = orjson.dumps(TOOL_INPUT).decode()
            third = len(arguments) // 3
            parts = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
            head = {"index": 0, "id": f"call_{completion_id}", "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": ""}}  # fmt: skip
            yield _chunk(completion_id, model, {"tool_calls": [head]})
            for part in parts:
                yield _chunk(completion_id, model, {"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
            finish, output_tokens = "tool_calls", 1
        else:
            delay = self.behaviour.delay_ms / 1000
            for word in _words(self.behaviour.tokens):
                if delay:
                    await asyncio.sleep(delay)
                yield _chunk(completion_id, model, {"content": word})
            finish, output_tokens = "stop", self.behaviour.tokens
        yield _chunk(completion_id, model, {}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": _prompt_tokens(body), "completion_tokens": output_tokens}
            usage["total_tokens"] = sum(usage.values())
            final = {"id": completion_id, "object": "chat.completion.chunk", "created": 1_700_000_000,
                     "model": model, "choices": [], "usage": usage}  # fmt: skip
            yield b"data: " + orjson.dumps(final) + b"\n\n"
        yield b"data: [DONE]\n\n"

    async def health(self, _request: Request) -> Response:
        return JSONResponse({"ok": True, "requests": self.requests})


def build_app(behaviour: Behaviour) -> Starlette:
    mock = MockOpenAI(behaviour)
    return mock_app("/v1/chat/completions", mock.completions, mock)


def main(argv: list[str] | None = None) -> None:
    serve_mock(build_app, Behaviour, prog="python -m bench.mock_openai", doc=__doc__, port=8998, argv=argv)


if __name__ == "__main__":
    main()
