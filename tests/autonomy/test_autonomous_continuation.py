"""An autonomous run that stops without settling (its replica died) and a continued run that goes on from
what the first one recorded: the real runtimes (LangGraph inside the autonomous one), the scripted model,
an in-memory journal standing for the database (everything recorded counts as stored).

Each test compares the two runs with one that never stopped: the same steps, the same outcome, and no
tool call dispatched twice under its idempotency key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.autonomy.runtime import AutonomousRuntime
from app.governance.policy import PolicySet
from app.graph.runtime import LangGraphRuntime
from app.providers.base import ChatMessage
from app.providers.scripted import ScriptedProvider
from app.runtime.port.journal import Continued, Progress, TurnRun, TurnServices
from app.tools.toolbox import ToolBox
from tests.autonomy.support import echo, plan
from tests.graph.memory import FixedGovernance, MemoryJournal

SCRIPT = [
    plan("first", "second", "third"),
    echo("one"), {"text": "step one done"},
    echo("two"), {"text": "step two done"},
    echo("three"), {"text": "step three done"},
    {"text": "all three steps are done"},
]  # fmt: skip
INPUT = ChatMessage(role="user", content="do it")
RUNTIME = AutonomousRuntime(LangGraphRuntime())
Stop = Callable[[MemoryJournal], bool]


def _services() -> TurnServices:
    tools = ToolBox(tool_refs=["builtin:echo"], gateway=None, gateway_token=None, team_unit="default")
    return TurnServices(provider=ScriptedProvider(), tools=tools, governance=FixedGovernance(PolicySet()))


def _run(journal: MemoryJournal, *, continued: Continued | None = None, max_loops: int = 20) -> TurnRun:
    """The turn as the engine would read it back: its stored messages, `plan.*` events and usage, and for a
    continued run the reply it stopped at (app/runtime/continuation.py)."""
    model = {"provider": "scripted", "name": "scripted-1", "script": SCRIPT}
    last = journal.messages[-1] if continued is not None and journal.messages else None
    stopped_at = last if last is not None and last.role == "assistant" else None
    return TurnRun(
        ident=journal.ident, agent_version=1, owner_sub="alice",
        snapshot={"model": model, "system_prompt": "be brief", "tools": ["builtin:echo"]},
        input=INPUT.content, history=[INPUT, *journal.messages], max_loops=max_loops, max_output_tokens=10_000,
        input_tokens=sum(u.input_tokens for u in journal.usage),
        output_tokens=sum(u.output_tokens for u in journal.usage),
        mode="autonomous", max_steps=5, continued=continued,
        pending=list(stopped_at.tool_calls) if stopped_at else [], last_text=stopped_at.content if stopped_at else "",
        plan_events=[e.model_dump(mode="json") for e in journal.events if e.type.startswith("plan.")],
    )  # fmt: skip


async def _until(journal: MemoryJournal, stop: Stop | None, *, max_loops: int = 20) -> Progress:
    """Run a new turn; with `stop`, the run is dropped (never settled) at the first progress after which
    `stop` holds, as when its replica dies."""
    last = Progress()
    runs = RUNTIME.run(_run(journal, max_loops=max_loops), _services(), journal)
    async for progress in runs:
        last = progress
        if stop is not None and stop(journal):
            await runs.aclose()
            break
    return last


async def _continued(first: MemoryJournal, *, max_loops: int = 20) -> tuple[MemoryJournal, Progress]:
    """A second run on what the first recorded: the ledger and the dispatches carry over (they are stored)."""
    second = MemoryJournal(ident=first.ident, ledger=dict(first.ledger), dispatches=list(first.dispatches))
    second.messages = list(first.messages)
    run = _run(first, continued=Continued("replica_lost", len(first.events)), max_loops=max_loops)
    last = Progress()
    async for progress in RUNTIME.run(run, _services(), second):
        last = progress
    second.messages = second.messages[len(first.messages) :]
    return second, last


def _of(journal: MemoryJournal, event_type: str) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in journal.of_type(event_type)]


def _steps(*journals: MemoryJournal) -> list[tuple[str, str, str]]:
    return [(e["todo_id"], e["status"], e["output"]) for j in journals for e in _of(j, "plan.step.completed")]


async def _crash_and_continue(stop: Stop) -> tuple[MemoryJournal, MemoryJournal, Progress]:
    first = MemoryJournal()
    await _until(first, stop)
    second, outcome = await _continued(first)
    whole = MemoryJournal(ident=first.ident)
    expected = await _until(whole, None)
    assert (outcome.status, outcome.final_output) == (expected.status, expected.final_output) == (
        "completed", "all three steps are done",
    )  # fmt: skip
    assert _steps(first, second) == _steps(whole)
    assert outcome.loop_count == expected.loop_count
    keys = [key for key, _, _ in second.dispatches]
    assert len(keys) == len(set(keys)) == len(whole.dispatches)
    assert sorted(second.ledger) == sorted(whole.ledger)
    return first, second, outcome


def _after_first(event_type: str, count: int = 1) -> Stop:
    return lambda journal: len(journal.of_type(event_type)) >= count


async def test_a_plan_never_stored_is_made_again() -> None:
    second, outcome = await _continued(MemoryJournal())  # the replica died while the PLAN call streamed
    assert len(_of(second, "plan.created")) == 1
    assert (outcome.status, outcome.final_output) == ("completed", "all three steps are done")


async def test_a_running_step_with_nothing_stored_starts_again_without_a_second_plan_or_start() -> None:
    first, second, _ = await _crash_and_continue(_after_first("plan.step.started"))
    assert [e["todo_id"] for e in _of(first, "plan.step.started")] == ["todo_1"]
    assert _of(second, "plan.created") == []
    assert [e["todo_id"] for e in _of(second, "plan.step.started")] == ["todo_2", "todo_3"]


async def test_a_step_continued_after_its_tool_result_makes_the_next_call_and_runs_no_tool_again() -> None:
    def step_two_tool_answered(journal: MemoryJournal) -> bool:
        return sum(1 for m in journal.messages if m.role == "tool") == 2

    first, second, _ = await _crash_and_continue(step_two_tool_answered)
    assert [e["todo_id"] for e in _of(second, "plan.step.started")] == ["todo_3"]
    assert [e.result for e in second.of_type("tool_call.completed")] == ["three"]
    assert [m.content for m in second.messages if m.role == "assistant"][0] == "step two done"
    assert len(first.dispatches) == 2


async def test_a_step_whose_call_was_dispatched_without_an_outcome_re_sends_it_under_the_same_key() -> None:
    def step_two_call_sent(journal: MemoryJournal) -> bool:
        return len(journal.dispatches) == 2

    first = MemoryJournal()
    await _until(first, step_two_call_sent)
    lost_key = first.dispatches[-1][0]
    del first.ledger[lost_key]  # the call left; its outcome was never stored
    second, outcome = await _continued(first)
    assert (outcome.status, outcome.final_output) == ("completed", "all three steps are done")
    assert second.ledger[lost_key].content == "two", "sent again under its key"
    assert [e.result for e in second.of_type("tool_call.completed")] == ["two", "three"]
    assert [call_id for _, call_id, _ in second.receipts if call_id] == [second.dispatches[-1][2].id], (
        "the re-sent call is not judged again; step 3's call is"
    )
    assert _steps(first, second) == [
        ("todo_1", "done", "step one done"), ("todo_2", "done", "step two done"), ("todo_3", "done", "step three done"),
    ]  # fmt: skip


async def test_a_step_whose_final_reply_was_stored_is_done_with_it_without_another_call() -> None:
    def step_two_answered(journal: MemoryJournal) -> bool:
        return any(m.content == "step two done" for m in journal.messages)

    first, second, _ = await _crash_and_continue(step_two_answered)
    assert [m.content for m in second.messages if m.role == "assistant"][0] == ""  # step 3's tool call
    assert _of(second, "plan.step.completed")[0]["output"] == "step two done"


async def test_a_summary_stored_before_the_crash_is_the_outcome_without_another_call() -> None:
    first = MemoryJournal()
    await _until(first, None)  # the summary is stored; the replica dies before the turn settles
    second, outcome = await _continued(first)
    assert (outcome.status, outcome.final_output) == ("completed", "all three steps are done")
    assert second.messages == []
    assert second.events == []


async def test_a_failed_step_stored_before_the_crash_ends_the_turn_with_the_limit_that_stopped_it() -> None:
    first = MemoryJournal()
    lost = await _until(first, _after_first("plan.step.completed", 2), max_loops=3)
    assert lost.status == "loop_limit"
    assert [e["status"] for e in _of(first, "plan.step.completed")] == ["done", "failed"]
    second, outcome = await _continued(first, max_loops=3)
    assert (outcome.status, outcome.final_output, outcome.loop_count) == ("loop_limit", "first:\nstep one done", 3)
    assert second.events == []
