"""The loop's model call reads the bytes of the files its prompt names and hands them to the provider."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterable
from typing import Any

from app.graph.nodes.llm import call_llm
from app.graph.state import TurnState
from app.providers.base import Attachment, ChatMessage, ModelRequest, ModelResponse, ProviderEvent
from tests.graph.memory import MemoryJournal, node_runtime

IMAGE = Attachment("f-1", "image", "shot.png", "image/png", 1600 * 4)


class Recording:
    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        yield ModelResponse(text="a square", input_tokens=1, output_tokens=2)


class Files:
    def __init__(self) -> None:
        self.asked: list[tuple[str, list[str]]] = []

    async def read(self, tenant_id: str, file_ids: Iterable[str]) -> dict[str, bytes]:
        self.asked.append((tenant_id, list(file_ids)))
        return {"f-1": b"PNG"}


async def test_call_llm_reads_the_prompts_files_for_the_provider() -> None:
    journal, provider, files = MemoryJournal(), Recording(), Files()
    runtime = node_runtime(journal, provider=provider)
    runtime = dataclasses.replace(runtime, context=dataclasses.replace(runtime.context, files=files))
    prompt = [ChatMessage(role="user", content="what?", attachments=(IMAGE,))]
    values: dict[str, Any] = {"input": "what?", "max_loops": 3, "max_output_tokens": 100, "prompt": prompt}

    await call_llm(TurnState(**values), runtime)  # type: ignore[typeddict-item]

    assert files.asked == [(journal.ident.tenant_id, ["f-1"])]
    assert provider.requests[0].files == {"f-1": b"PNG"}
    assert provider.requests[0].messages[0].attachments == (IMAGE,)
