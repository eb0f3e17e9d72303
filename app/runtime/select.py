"""The runtime a turn runs on, chosen by its session's snapshot (`runtime`: `langgraph` or `claude_sdk`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from app.runtime.journal import Progress, TurnJournal, TurnRun, TurnRuntime, TurnServices

DEFAULT_RUNTIME = "langgraph"


class RuntimeBySnapshot:
    def __init__(self, runtimes: Mapping[str, TurnRuntime]) -> None:
        self.runtimes = dict(runtimes)

    def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]:
        name = str(run.snapshot.get("runtime") or DEFAULT_RUNTIME)
        runtime = self.runtimes.get(name)
        if runtime is None:
            return _unavailable(name)
        return runtime.run(run, services, journal)


async def _unavailable(name: str) -> AsyncIterator[Progress]:
    yield Progress(
        status="failed", error={"code": "runtime_unavailable", "message": f"runtime {name!r} is not enabled"}
    )
