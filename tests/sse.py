"""A small SSE reader for tests: parses `id`, `event`, `data` frames and `retry:` hints, skips comments."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Frame:
    id: int
    event: str
    data: dict[str, Any]


def _fields(block: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value.removeprefix(" ")
    return fields


def _blocks(text: str) -> list[dict[str, str]]:
    return [_fields(block) for block in text.replace("\r\n", "\n").split("\n\n")]


def parse(text: str) -> list[Frame]:
    return [
        Frame(int(fields["id"]), fields["event"], json.loads(fields["data"]))
        for fields in _blocks(text)
        if "data" in fields
    ]


def retry_hints(text: str) -> list[int]:
    """The reconnection delays (ms) the server sent as `retry:` lines, in order."""
    return [int(fields["retry"]) for fields in _blocks(text) if "retry" in fields]


async def iter_blocks(response: httpx.Response) -> AsyncIterator[str]:
    """The stream's blocks (each ends with its blank line) as they arrive."""
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk.replace("\r\n", "\n")
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            yield block + "\n\n"


async def iter_frames(response: httpx.Response) -> AsyncIterator[Frame]:
    async for block in iter_blocks(response):
        for frame in parse(block):
            yield frame


async def read_turn(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> list[Frame]:
    async with client.stream(method, url, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [frame async for frame in iter_frames(response)]
