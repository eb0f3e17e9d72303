"""Chat Completions stream chunks as OpenAI and compatible servers send them (for respx and the
loopback mock server)."""

from __future__ import annotations

import json
from typing import Any

MODEL = "gpt-4o-mini"


def chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None, usage: dict[str, int] | None = None,
          choices: bool = True) -> dict[str, Any]:  # fmt: skip
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else [],
    }
    if usage is not None:
        body["usage"] = {**usage, "total_tokens": sum(usage.values())}
    return body


def text_chunks(*parts: str) -> list[dict[str, Any]]:
    first = [chunk({"role": "assistant", "content": ""})]
    return first + [chunk({"content": part}) for part in parts]


def tool_fragment(index: int, *, call_id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    call: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        call.update(id=call_id, type="function")
    return chunk({"tool_calls": [call]})


def usage_chunk(prompt: int, completion: int) -> dict[str, Any]:
    return chunk(choices=False, usage={"prompt_tokens": prompt, "completion_tokens": completion})


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {401: "invalid_request_error", 429: "rate_limit_error", 500: "server_error", 529: "overloaded"}
    return {"error": {"message": message, "type": kinds.get(status, "error"), "param": None, "code": None}}
