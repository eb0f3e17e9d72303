"""The floor of the `openai` scenarios: the same bare proxy as `bench/floor_server.py`, on the `openai`
SDK (Chat Completions, streamed) against `bench/mock_openai.py`.

    python -m bench.floor_openai --port 8101 --mock http://127.0.0.1:8998/v1

No database, no graph, no auth: `POST /turns {"message": …}` streams each text delta as
`event: token`, each `echo` call (answered locally) as `event: tool`, and ends with `event: end`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson
from fastapi import FastAPI
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from bench.floor_server import MAX_ROUNDS, _tool_output
from bench.serving import floor_app, serve_floor

MODEL = "gpt-mock"
ECHO_FUNCTION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "echo",
        "description": "Echo the given text back.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
}


async def _turn(client: AsyncOpenAI, text: str) -> AsyncIterator[dict[str, str]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    for _ in range(MAX_ROUNDS):
        stream = await client.chat.completions.create(  # type: ignore[call-overload]
            model=MODEL,
            messages=messages,  # type: ignore[arg-type]
            tools=[ECHO_FUNCTION],  # type: ignore[list-item]
            max_tokens=1024,
            stream=True,
            stream_options={"include_usage": True},
        )
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                yield {"event": "token", "data": orjson.dumps({"text": delta.content}).decode()}
            for fragment in delta.tool_calls or ():
                call = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or fragment.id or ""
                if fragment.function is not None:
                    call["name"] = call["name"] or fragment.function.name or ""
                    call["arguments"] += fragment.function.arguments or ""
        if not calls:
            break
        ordered = [calls[index] for index in sorted(calls)]
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in ordered
        ]})  # fmt: skip
        for call in ordered:
            output = _tool_output(json.loads(call["arguments"] or "{}"))
            yield {"event": "tool", "data": orjson.dumps({"name": call["name"], "output": output}).decode()}
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    yield {"event": "end", "data": "{}"}


def build_app(mock_url: str, connections: int = 1000) -> FastAPI:
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=min(connections, 100))
    http = DefaultAsyncHttpxClient(limits=limits)
    client = AsyncOpenAI(base_url=mock_url, api_key="x", max_retries=0, http_client=http)
    return floor_app(lambda message: _turn(client, message))


def main(argv: list[str] | None = None) -> None:
    mock = "http://127.0.0.1:8998/v1"
    serve_floor(build_app, prog="python -m bench.floor_openai", doc=__doc__, port=8101, mock=mock, argv=argv)


if __name__ == "__main__":
    main()
