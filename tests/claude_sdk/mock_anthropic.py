"""A loopback Anthropic Messages API for the bundled Claude Code CLI (`ANTHROPIC_BASE_URL`).

It speaks the wire format the CLI reads: `POST /v1/messages` with `stream: true` answered as SSE
(`message_start`, `content_block_*`, `message_delta` with usage, `message_stop`), and a JSON reply
for the non-streaming calls. Every request is logged (path, headers, body) so a test can assert on
what the CLI sent. Replies are scripted per test: each model call that offers tools (the agent's
loop) takes the next step of the script; side calls without tools (the CLI's own housekeeping,
e.g. a title or a quota probe) get a short fixed text and do not consume a step.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.autonomy.plan import PLAN_INSTRUCTION
from app.autonomy.runtime import SUMMARY_INSTRUCTION

SIDE_TEXT = "ok"


@dataclass
class Step:
    """One scripted model reply: text (streamed word by word), then tool calls, if any."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hold: asyncio.Event | None = None
    """When set, the stream pauses after its first delta until the event is set (to cancel mid-reply)."""
    holding: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the stream has paused at `hold`."""
    tool_ids: tuple[str, ...] = ()
    """The ids of its tool calls (default: a new `toolu_mock_N` each, as the API gives)."""


@dataclass
class Logged:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class MockAnthropic:
    def __init__(self) -> None:
        self.log: list[Logged] = []
        self.script: list[Step] = []
        self.calls = 0
        self._ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/{path:path}", self._other, methods=["GET", "POST", "PUT", "HEAD"]),
            ]
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def play(self, *steps: Step) -> None:
        """Script the next model calls (the agent's loop calls, in order)."""
        self.script.extend(steps)

    def loop_requests(self) -> list[dict[str, Any]]:
        """Bodies of the model calls that took a script step."""
        return [e.body for e in self.log if e.path == "/v1/messages" and _is_loop_call(e.body)]

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task

    async def _record(self, request: Request) -> Any:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.log.append(Logged(request.method, request.url.path, dict(request.headers), body))
        return body

    async def _other(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": "mock"}}, status_code=404)

    async def _count_tokens(self, request: Request) -> Response:
        body = await self._record(request)
        return JSONResponse({"input_tokens": _estimate(body)})

    async def _messages(self, request: Request) -> Response:
        body = await self._record(request)
        step = Step(text=SIDE_TEXT)
        if _is_loop_call(body):
            if not self.script:
                return JSONResponse(
                    {"type": "error", "error": {"type": "invalid_request_error", "message": "script exhausted"}},
                    status_code=400,
                )
            step = self.script.pop(0)
            self.calls += 1
        model = str(body.get("model", "mock"))
        message_id = f"msg_mock_{next(self._ids)}"
        input_tokens = _estimate(body)
        if not body.get("stream"):
            return JSONResponse(self._whole(step, model, message_id, input_tokens))
        return StreamingResponse(self._sse(step, model, message_id, input_tokens), media_type="text/event-stream")

    def _tool_ids(self, step: Step) -> list[str]:
        return list(step.tool_ids) or [f"toolu_mock_{next(self._ids)}" for _ in step.tool_calls]

    def _whole(self, step: Step, model: str, message_id: str, input_tokens: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": step.text}] if step.text else []
        for tool_id, (name, arguments) in zip(self._tool_ids(step), step.tool_calls, strict=True):
            content.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
        return {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if step.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": _words(step)},
        }  # fmt: skip

    async def _sse(self, step: Step, model: str, message_id: str, input_tokens: int) -> AsyncIterator[bytes]:
        start = {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0},
        }  # fmt: skip
        yield _frame("message_start", {"type": "message_start", "message": start})
        index = 0
        if step.text:
            yield _frame(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
            for n, word in enumerate(_chunks(step.text)):
                delta = {"type": "text_delta", "text": word}
                yield _frame("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
                if n == 0 and step.hold is not None:
                    step.holding.set()
                    await step.hold.wait()
            yield _frame("content_block_stop", {"type": "content_block_stop", "index": 0})
            index = 1
        for tool_id, (name, arguments) in zip(self._tool_ids(step), step.tool_calls, strict=True):
            block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
            yield _frame("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
            yield _frame("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            yield _frame("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        stop_reason = "tool_use" if step.tool_calls else "end_turn"
        yield _frame(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": _words(step)},
            },
        )
        yield _frame("message_stop", {"type": "message_stop"})


def _is_loop_call(body: Any) -> bool:
    """The agent's own model calls carry its tool list (or a loop marker in the system prompt); side calls do not."""
    return isinstance(body, dict) and bool(body.get("tools")) or _has_marker(body)


LOOP_MARKER = "[agent-loop]"
"""Tests put this in the agent's system prompt so a tool-less agent's calls are told from side calls."""
LOOP_MARKERS = (LOOP_MARKER, PLAN_INSTRUCTION, SUMMARY_INSTRUCTION)
"""An autonomous turn's plan and summary calls (made by the service, not Claude Code) are loop calls too."""


def _has_marker(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    system = body.get("system")
    text = json.dumps(system) if system is not None else ""
    return any(json.dumps(marker)[1:-1] in text for marker in LOOP_MARKERS)


def _chunks(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]


def _words(step: Step) -> int:
    return max(len(step.text.split()), 1) + len(step.tool_calls)


def _estimate(body: Any) -> int:
    return max(len(json.dumps(body)) // 4, 1) if body is not None else 1


def _frame(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
