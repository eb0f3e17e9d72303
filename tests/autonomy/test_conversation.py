"""The stored conversation of an autonomous turn split by step (what a decision or a continuation goes on from)."""

from __future__ import annotations

import json
from typing import Any

from app.autonomy.conversation import StoredTurn
from app.autonomy.plan import Plan
from app.providers.base import ChatMessage, ToolCall

EARLIER = [ChatMessage(role="user", content="earlier turn"), ChatMessage(role="assistant", content="earlier reply")]
INPUT = ChatMessage(role="user", content="do it")
PLAN = ChatMessage(role="assistant", content=json.dumps({"todos": [{"title": "a"}, {"title": "b"}, {"title": "c"}]}))


def _call(call_id: str) -> list[ChatMessage]:
    """An assistant message asking for one tool, and its result."""
    return [
        ChatMessage(role="assistant", content="", tool_calls=(ToolCall(call_id, "echo", {"text": call_id}),)),
        ChatMessage(role="tool", content=call_id, tool_call_id=call_id, name="echo"),
    ]


def _reply(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def _plan(*states: tuple[str, str]) -> Plan:
    """A plan of todos a, b, c whose steps have the given (todo id, status) events after `plan.created`."""
    events: list[dict[str, Any]] = [
        {"type": "plan.created", "todos": [{"id": f"todo_{i}", "title": t} for i, t in enumerate("abc", 1)]}
    ]
    for todo_id, status in states:
        event = {"todo_id": todo_id, "title": "?", "status": status, "output": ""}
        events.append({**event, "type": "plan.step.started" if status == "running" else "plan.step.completed"})
    return Plan.of_events(events)


def test_a_new_turn_has_only_the_conversation_before_it() -> None:
    stored = StoredTurn.of([*EARLIER, INPUT], Plan())
    assert (stored.before, stored.plan, stored.done, stored.rest) == ([*EARLIER, INPUT], [], [], [])


def test_the_messages_after_the_done_steps_are_the_running_steps() -> None:
    step_1 = [*_call("c1"), _reply("a done")]
    running = _call("c2")[:1]
    plan = _plan(("todo_1", "done"), ("todo_2", "running"))
    stored = StoredTurn.of([*EARLIER, INPUT, PLAN, *step_1, *running], plan)
    assert (stored.before, stored.plan, stored.done, stored.rest) == ([*EARLIER, INPUT], [PLAN], [step_1], running)
    assert stored.summary is None


def test_an_invalid_first_plan_reply_belongs_to_the_plan_and_skipped_todos_have_no_messages() -> None:
    invalid = _reply("not json")
    step_2 = [_reply("b done")]
    plan = _plan(("todo_1", "skipped"), ("todo_2", "done"), ("todo_3", "running"))
    stored = StoredTurn.of([INPUT, invalid, PLAN, *step_2], plan)
    assert (stored.plan, stored.done, stored.rest) == ([invalid, PLAN], [step_2], [])


def test_a_reply_after_every_done_step_is_the_stored_summary() -> None:
    steps = [[_reply("a done")], [*_call("c2"), _reply("b done")], [_reply("c done")]]
    plan = _plan(("todo_1", "done"), ("todo_2", "done"), ("todo_3", "done"))
    stored = StoredTurn.of([INPUT, PLAN, *steps[0], *steps[1], *steps[2], _reply("the summary")], plan)
    assert stored.done == steps
    assert stored.summary == "the summary"


def test_the_conversation_puts_each_steps_goal_before_its_messages() -> None:
    step_1 = [*_call("c1"), _reply("a done")]
    running = _call("c2")
    plan = _plan(("todo_1", "done"), ("todo_2", "running"))
    stored = StoredTurn.of([INPUT, PLAN, *step_1, *running], plan)
    goals = [m for m in stored.conversation(plan, plan.running(), "do it") if m.role == "user"][1:]
    assert [g.content.rsplit("\n", 1)[-1] for g in goals] == ["Now do only this step: a", "Now do only this step: b"]
    conversation = stored.conversation(plan, plan.running(), "do it")
    assert [m for m in conversation if m.role != "user"] == [PLAN, *step_1, *running]
    assert conversation[-2:] == running
    assert [m.role for m in stored.conversation(plan, None, "do it")][-1] == "assistant"


def test_the_loops_count_the_steps_rounds_but_not_the_plan_the_summary_or_an_unclosed_final_reply() -> None:
    step_1 = [*_call("c1"), _reply("a done")]
    asked = _call("c2")[:1]
    plan = _plan(("todo_1", "done"), ("todo_2", "running"))
    assert StoredTurn.of([INPUT, PLAN, *step_1, *asked], plan).loops == 2
    assert StoredTurn.of([INPUT, PLAN, *step_1, *_call("c2")], plan).loops == 3
    assert StoredTurn.of([INPUT, PLAN, *step_1, *_call("c2"), _reply("b done")], plan).loops == 3
    every = _plan(("todo_1", "done"), ("todo_2", "done"), ("todo_3", "skipped"))
    assert StoredTurn.of([INPUT, PLAN, *step_1, _reply("b done"), _reply("summary")], every).loops == 3
