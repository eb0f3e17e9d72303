"""`streamGenerateContent` chunks as the Gemini API sends them (for respx and the loopback mock)."""

from __future__ import annotations

import json
from typing import Any

MODEL = "gemini-2.5-flash"


def stream_path(model: str = MODEL) -> str:
    return f"/v1/models/{model}:streamGenerateContent"


def chunk(*parts: dict[str, Any], finish: str | None = None, usage: tuple[int, int] | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if usage is not None:
        body["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": sum(usage),
        }
    return body


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def call(name: str, args: dict[str, Any], call_id: str | None = None, signature: str | None = None) -> dict[str, Any]:
    function_call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        function_call["id"] = call_id
    part: dict[str, Any] = {"functionCall": function_call}
    if signature:
        part["thoughtSignature"] = signature
    return part


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)


def error_body(status: int, message: str) -> dict[str, Any]:
    names = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
             503: "UNAVAILABLE", 529: "UNAVAILABLE", 400: "INVALID_ARGUMENT"}  # fmt: skip
    return {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
