"""The PLAN reply (JSON `{"todos": [{"title": "…"}]}`, validated) and the plan's state rebuilt from its events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PLAN_INSTRUCTION = (
    "You are planning, not acting. Decompose the user's request into an ordered list of concrete todos. "
    'Reply with JSON only, exactly of the form {"todos": [{"title": "..."}, ...]}, with at least one todo.'
)


class _Todo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=500)


class _PlanReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    todos: list[_Todo] = Field(min_length=1, max_length=100)


class PlanInvalid(ValueError):
    """The model's reply is not a valid plan; the message says why (handed back to the model once)."""


def parse_plan(text: str) -> list[str]:
    """The todos' titles of a PLAN reply (a fenced ```json block is accepted)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        reply = _PlanReply.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors())
        raise PlanInvalid(problems[:1000]) from exc
    return [todo.title for todo in reply.todos]


@dataclass(slots=True)
class Step:
    id: str
    title: str
    status: str = "pending"
    """`pending`, `running`, `done`, `failed` or `skipped`."""
    output: str = ""


@dataclass(slots=True)
class Plan:
    steps: list[Step] = field(default_factory=list)

    @classmethod
    def of_events(cls, events: list[dict[str, Any]]) -> Plan:
        """The plan and each step's state from a turn's `plan.*` events, in order."""
        plan = cls()
        for event in events:
            if event["type"] == "plan.created":  # again, in full, when a step adds todos
                for todo in event["todos"]:
                    plan.step(todo["id"], todo["title"])
            elif event["type"] == "plan.step.started":
                plan.step(event["todo_id"], event["title"]).status = "running"
            elif event["type"] == "plan.step.completed":
                step = plan.step(event["todo_id"], event["title"])
                step.status, step.output = event["status"], event["output"]
        return plan

    def step(self, todo_id: str, title: str) -> Step:
        for step in self.steps:
            if step.id == todo_id:
                return step
        self.steps.append(Step(todo_id, title))
        return self.steps[-1]

    def running(self) -> Step | None:
        return next((s for s in self.steps if s.status == "running"), None)

    def next_pending(self) -> Step | None:
        return next((s for s in self.steps if s.status == "pending"), None)

    def outline(self, current: Step | None) -> str:
        lines = []
        for index, step in enumerate(self.steps, 1):
            marker = "current" if step is current else step.status
            lines.append(f"{index}. [{marker}] {step.title}")
        return "\n".join(lines)

    def outputs(self) -> str:
        return "\n\n".join(f"{s.title}:\n{s.output}" for s in self.steps if s.status == "done" and s.output)
