"""The LangGraph runtime: a turn's loop (app/graph/build.py) behind the engine's `TurnRuntime` port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from app.graph.build import build_graph
from app.graph.context import TurnContext
from app.graph.loop import stepped
from app.graph.state import TurnState
from app.runtime.port.events import ToolCallRequested
from app.runtime.port.journal import Progress, TurnJournal, TurnRun, TurnServices


def initial_state(run: TurnRun) -> TurnState:
    state: TurnState = {
        "input": run.input,
        "max_loops": run.max_loops,
        "max_output_tokens": run.max_output_tokens,
        "max_total_tokens": run.max_total_tokens,
        "loop_count": run.loop_count,
        "model_calls": sum(1 for m in run.history if m.role == "assistant"),
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "history": run.history,
        "new_messages": [],
        "status": None,
        "error": None,
    }
    if run.resumed or (run.continued is not None and run.pending):
        state["resume"] = True
        state["decisions"] = run.decisions
        state["pending"] = list(run.pending)
        state["last_text"] = run.last_text
        state["results"] = {}
    if run.continued is not None:
        state["continued"] = run.continued
        state["decisions"] = run.decisions
        state["answered"] = not run.pending and bool(run.history) and run.history[-1].role == "assistant"
        state["last_text"] = run.last_text
    return state


def lost_requests(run: TurnRun, journal: TurnJournal) -> None:
    """A continued run that re-enters a tool batch first emits the batch's `tool_call.requested` events
    that the lost run emitted but never stored (so the client's stream, after its drop rule, has them)."""
    continued = run.continued
    if continued is None:
        return
    for call in run.pending:
        if not continued.stored("tool_call.requested", call.id):
            journal.event(ToolCallRequested(tool_call_id=call.id, name=call.name, arguments=call.arguments))


def progress_of(state: TurnState) -> Progress:
    return Progress(
        status=state.get("status"),
        error=state.get("error"),
        final_output=state.get("final_output"),
        output=state.get("output"),
        last_text=state.get("last_text", ""),
        loop_count=state.get("loop_count", 0),
        input_tokens=state.get("input_tokens", 0),
        output_tokens=state.get("output_tokens", 0),
    )


GraphDriver = Literal["direct", "pregel"]


class LangGraphRuntime:
    """Each run streams the loop's state as `Progress`: stepped directly (`direct`, the default), or
    through the `StateGraph` compiled once per process (`pregel`)."""

    def __init__(self, driver: GraphDriver = "direct") -> None:
        self.graph: Any = build_graph() if driver == "pregel" else None

    async def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]:
        context = TurnContext.of(run, services, journal)
        lost_requests(run, journal)
        state = initial_state(run)
        if self.graph is None:
            states: AsyncIterator[Any] = stepped(state, context)
        else:
            states = self.graph.astream(state, context=context, stream_mode="values")
        async for values in states:
            yield progress_of(values)
