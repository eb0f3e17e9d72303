"""A small SSE reader for tests: parses `id`, `event`, `data` frames and skips comments."""

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


def parse(text: str) -> list[Frame]:
    frames = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if "data" in fields:
            frames.append(Frame(int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return frames


async def iter_frames(response: httpx.Response) -> AsyncIterator[Frame]:
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk.replace("\r\n", "\n")
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            for frame in parse(block + "\n\n"):
                yield frame


async def read_turn(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> list[Frame]:
    async with client.stream(method, url, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [frame async for frame in iter_frames(response)]
