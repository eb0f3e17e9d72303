"""The practical floor: the least a service can do to stream a model's reply over SSE.

    python -m bench.floor_server --port 8100 --mock http://127.0.0.1:8999 [--connections 1000]

FastAPI + sse-starlette + the official anthropic SDK proxying the mock, with no database, no graph and
no auth. `POST /turns {"message": …}` streams each text delta as an `event: token`, each tool call
(the `echo` tool, answered locally) as an `event: tool`, and closes with `event: end`. Its SDK client's
pool holds `--connections` (default 1,000, the SDK's own).
`agent-runtime` is measured against it in the same run (`bench.run`), so ratios, not absolute times,
are what the bench reports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson
from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient
from fastapi import FastAPI

from bench.serving import floor_app, serve_floor

MODEL = "claude-mock"
MAX_ROUNDS = 4
ECHO_TOOL: dict[str, Any] = {
    "name": "echo",
    "description": "Echo the given text back.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def _tool_output(arguments: object) -> str:
    return str(arguments.get("text", "")) if isinstance(arguments, dict) else str(arguments)


async def _turn(client: AsyncAnthropic, text: str) -> AsyncIterator[dict[str, str]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    for _ in range(MAX_ROUNDS):
        async with client.messages.stream(
            model=MODEL,
            max_tokens=1024,
            messages=messages,  # type: ignore[arg-type]
            tools=[ECHO_TOOL],  # type: ignore[list-item]
        ) as stream:
            async for event in stream:
                if event.type == "text":
                    yield {"event": "token", "data": orjson.dumps({"text": event.text}).decode()}
            final = await stream.get_final_message()
        if final.stop_reason != "tool_use":
            break
        messages.append({"role": "assistant", "content": [block.model_dump() for block in final.content]})
        results = []
        for block in final.content:
            if block.type == "tool_use":
                output = _tool_output(block.input)
                yield {"event": "tool", "data": orjson.dumps({"name": block.name, "output": output}).decode()}
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})
    yield {"event": "end", "data": "{}"}


def build_app(mock_url: str, connections: int = 1000) -> FastAPI:
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=min(connections, 100))
    http = DefaultAsyncHttpxClient(limits=limits)
    client = AsyncAnthropic(base_url=mock_url, api_key="x", max_retries=0, http_client=http)
    return floor_app(lambda message: _turn(client, message))


def main(argv: list[str] | None = None) -> None:
    serve_floor(
        build_app, prog="python -m bench.floor_server", doc=__doc__, port=8100, mock="http://127.0.0.1:8999", argv=argv
    )


if __name__ == "__main__":
    main()
