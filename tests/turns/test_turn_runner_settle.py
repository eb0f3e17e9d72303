"""runner.execute settles a turn exactly once, even when cancelled again while it settles."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from app.runtime.manager import TurnManager
from app.runtime.port.events import EventBody
from app.runtime.port.journal import Progress, TurnIdentity, TurnRun
from app.runtime.runner import execute
from tests.graph.memory import MemoryJournal


class EndlessRuntime:
    """A runtime whose run only ends by cancellation, like a model stream that never finishes."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def run(self, run: TurnRun, services: Any, journal: Any) -> AsyncIterator[Progress]:
        self.started.set()
        await asyncio.Event().wait()
        yield Progress()


class GatedStream:
    """Records events; `end` (the settling write) waits for the test to open the gate."""

    last_seq = 0

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.ending = asyncio.Event()
        self.gate = asyncio.Event()
        self.ended = False

    def emit(self, event: EventBody) -> int:
        self.events.append((event.type, event.model_dump()))
        return len(self.events)

    async def end(self, event: EventBody, settle: Any) -> bool:
        self.ending.set()
        await self.gate.wait()
        self.events.append((event.type, event.model_dump()))
        self.ended = True
        return True


def _run() -> TurnRun:
    ident = TurnIdentity("tenant", uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
    return TurnRun(
        ident=ident, agent_version=1, owner_sub="alice", snapshot={"runtime": "elsewhere"}, input="hi", history=[],
        max_loops=3, max_output_tokens=100,
    )  # fmt: skip


async def test_a_second_cancel_while_settling_does_not_cut_the_settlement_short() -> None:
    graph, stream = EndlessRuntime(), GatedStream()
    task = asyncio.create_task(execute(graph, _run(), None, MemoryJournal(), stream, None))  # type: ignore[arg-type]
    await asyncio.wait_for(graph.started.wait(), 10)
    task.cancel()
    await asyncio.wait_for(stream.ending.wait(), 10)
    task.cancel()
    await asyncio.sleep(0)
    stream.gate.set()
    assert await asyncio.wait_for(task, 10) == "cancelled"
    assert stream.ended
    ended = [data for kind, data in stream.events if kind == "turn.ended"]
    assert len(ended) == 1
    assert ended[0]["status"] == "cancelled"


async def test_a_shutdown_while_settling_keeps_the_decided_outcome() -> None:
    graph, stream = EndlessRuntime(), GatedStream()
    task = asyncio.create_task(execute(graph, _run(), None, MemoryJournal(), stream, None))  # type: ignore[arg-type]
    await asyncio.wait_for(graph.started.wait(), 10)
    task.cancel()
    await asyncio.wait_for(stream.ending.wait(), 10)
    task.cancel(msg="shutdown")
    await asyncio.sleep(0)
    stream.gate.set()
    assert await asyncio.wait_for(task, 10) == "cancelled"
    assert [data["status"] for kind, data in stream.events if kind == "turn.ended"] == ["cancelled"]


async def test_a_runtime_this_process_lacks_fails_the_turn_with_a_reason() -> None:
    stream = GatedStream()
    stream.gate.set()
    runtime = TurnManager.runtime_of(SimpleNamespace(runtimes={}), _run())  # type: ignore[arg-type]
    assert await execute(runtime, _run(), None, None, stream, None) == "failed"  # type: ignore[arg-type]
    [ended] = [data for kind, data in stream.events if kind == "turn.ended"]
    assert ended["error"]["code"] == "runtime_unavailable"
