"""A loopback stand-in for Anthropic's Messages API, so the bench needs nothing outside the repository.

    python -m bench.mock_anthropic --port 8999 [--tokens 50] [--delay-ms 0] [--tool-mode]

`POST /v1/messages` answers streaming (the SSE event sequence the official SDK parses:
`message_start`, `content_block_start`, `content_block_delta`…, `content_block_stop`, `message_delta`,
`message_stop`) or as one JSON message. Each reply has `--tokens` words, `--delay-ms` apart.
With `--tool-mode`, a request that offers a tool named `echo` and ends with a plain user message gets a
`tool_use` of `echo` (`{"text": "hello from mock"}`); the request carrying its `tool_result` gets text.
`POST /behaviour {"hold_seconds": 130, "ping_seconds": 10}` changes how later replies stream: each
text reply sends its first word, then holds the stream open with SSE `ping` events every `ping_seconds`
until `hold_seconds` have passed since the request, then sends the rest (the idle run's open streams;
`hold_seconds` 0 turns it off). `GET /health` for readiness.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bench.serving import mock_app, serve_mock

TOOL_NAME = "echo"
TOOL_INPUT = {"text": "hello from mock"}


@dataclass(frozen=True, slots=True)
class Behaviour:
    tokens: int = 50
    delay_ms: float = 0.0
    tool_mode: bool = False
    hold_seconds: float = 0.0
    ping_seconds: float = 10.0


PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_ids = itertools.count(1)


def _frame(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **payload}) + b"\n\n"


def _wants_tool(body: dict[str, Any], behaviour: Behaviour) -> bool:
    """A tool call when `echo` is offered and the conversation ends on the user's own words."""
    if not behaviour.tool_mode or not any(t.get("name") == TOOL_NAME for t in body.get("tools") or []):
        return False
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return False
    content = messages[-1].get("content")
    if isinstance(content, str):
        return True
    return all(isinstance(block, dict) and block.get("type") != "tool_result" for block in content or [])


def _prompt_tokens(body: dict[str, Any]) -> int:
    return max(1, len(orjson.dumps(body.get("messages") or [])) // 4)


def _words(count: int) -> list[str]:
    return [f"w{i} " for i in range(count)]


class MockAnthropic:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests = 0

    async def set_behaviour(self, request: Request) -> Response:
        """`POST /behaviour`: hold_seconds and ping_seconds of the replies that follow."""
        body = orjson.loads(await request.body())
        current = self.behaviour
        self.behaviour = dataclasses.replace(
            current,
            hold_seconds=float(body.get("hold_seconds", current.hold_seconds)),
            ping_seconds=float(body.get("ping_seconds", current.ping_seconds)),
        )
        return JSONResponse(dataclasses.asdict(self.behaviour))

    async def messages(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests += 1
        tool = _wants_tool(body, self.behaviour)
        message_id = f"msg_mock_{next(_ids)}"
        if body.get("stream"):
            return StreamingResponse(self._stream(body, message_id, tool), media_type="text/event-stream")
        return JSONResponse(self._whole(body, message_id, tool))

    def _whole(self, body: dict[str, Any], message_id: str, tool: bool) -> dict[str, Any]:
        if tool:
            content: list[dict[str, Any]] = [
                {"type": "tool_use", "id": f"toolu_{message_id}", "name": TOOL_NAME, "input": TOOL_INPUT}
            ]
        else:
            content = [{"type": "text", "text": "".join(_words(self.behaviour.tokens))}]
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "mock"),
            "content": content,
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": _prompt_tokens(body), "output_tokens": 1 if tool else self.behaviour.tokens},
        }

    async def _stream(self, body: dict[str, Any], message_id: str, tool: bool) -> AsyncIterator[bytes]:
        behaviour = self.behaviour
        started = time.monotonic()
        start = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "mock"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": _prompt_tokens(body), "output_tokens": 1},
        }
        yield _frame("message_start", {"message": start})
        delay = behaviour.delay_ms / 1000
        if tool:
            block = {"type": "tool_use", "id": f"toolu_{message_id}", "name": TOOL_NAME, "input": {}}
            yield _frame("content_block_start", {"index": 0, "content_block": block})
            partial = orjson.dumps(TOOL_INPUT).decode()
            yield _frame(
                "content_block_delta", {"index": 0, "delta": {"type": "input_json_delta", "partial_json": partial}}
            )
            output_tokens = 1
        else:
            yield _frame("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
            for i, word in enumerate(_words(behaviour.tokens)):
                if delay:
                    await asyncio.sleep(delay)
                yield _frame("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": word}})
                if i == 0 and behaviour.hold_seconds > 0:
                    async for ping in _hold(started + behaviour.hold_seconds, behaviour.ping_seconds):
                        yield ping
            output_tokens = behaviour.tokens
        yield _frame("content_block_stop", {"index": 0})
        stop = {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None}
        yield _frame("message_delta", {"delta": stop, "usage": {"output_tokens": output_tokens}})
        yield _frame("message_stop", {})

    async def health(self, _request: Request) -> Response:
        return JSONResponse({"ok": True, "requests": self.requests})


async def _hold(until: float, every: float) -> AsyncIterator[bytes]:
    """SSE `ping` events every `every` seconds until the monotonic time `until`."""
    while (left := until - time.monotonic()) > 0:
        await asyncio.sleep(min(every, left))
        if time.monotonic() < until:
            yield PING


def build_app(behaviour: Behaviour) -> Starlette:
    mock = MockAnthropic(behaviour)
    app = mock_app("/v1/messages", mock.messages, mock)
    app.router.routes.append(Route("/behaviour", mock.set_behaviour, methods=["POST"]))
    return app


def main(argv: list[str] | None = None) -> None:
    serve_mock(build_app, Behaviour, prog="python -m bench.mock_anthropic", doc=__doc__, port=8999, argv=argv)


if __name__ == "__main__":
    main()
