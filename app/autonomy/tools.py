"""`plan_update`: the tool an autonomous turn's steps are offered to revise the rest of the plan.

It goes through the same gate as every other call (blacklist, policy, approvals, the ledger); the
runtime runs it itself. Only pending todos may be skipped; added todos go at the end, and the plan
may not grow beyond the turn's `max_steps`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.autonomy.plan import Plan, Step
from app.providers.base import ToolCall, ToolSpec
from app.runtime.port.events import PlanCreated, PlanStepCompleted, PlanTodo
from app.runtime.port.journal import TurnJournal
from app.tools.base import ToolResult
from app.tools.toolbox import ToolBox

PLAN_UPDATE = "plan_update"
PLAN_UPDATE_SPEC = ToolSpec(
    name=PLAN_UPDATE,
    description="Revise the rest of the plan: skip pending todos by id, or add todos at the end.",
    input_schema={
        "type": "object",
        "properties": {
            "skip": {"type": "array", "items": {"type": "string"}, "description": "ids of pending todos to skip"},
            "add": {
                "type": "array",
                "items": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
            },
        },
        "additionalProperties": False,
    },
)


class _Title(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=500)


class _Update(BaseModel):
    model_config = ConfigDict(extra="forbid")
    skip: list[str] = Field(default_factory=list, max_length=100)
    add: list[_Title] = Field(default_factory=list, max_length=100)


class PlanTools(ToolBox):
    """The agent's tools plus `plan_update`, over the plan of the run it belongs to."""

    def __init__(self, inner: ToolBox, plan: Plan, journal: TurnJournal, max_steps: int) -> None:
        self.inner, self.plan, self.journal, self.max_steps = inner, plan, journal, max_steps
        self.builtins, self.servers = inner.builtins, inner.servers

    async def specs(self) -> list[ToolSpec]:
        return [*await self.inner.specs(), PLAN_UPDATE_SPEC]

    async def known(self, name: str) -> bool:
        return name == PLAN_UPDATE or await self.inner.known(name)

    def is_mcp(self, name: str) -> bool:
        return self.inner.is_mcp(name)

    async def run(self, call: ToolCall, idempotency_key: str) -> ToolResult:
        if call.name != PLAN_UPDATE:
            return await self.inner.run(call, idempotency_key)
        try:
            update = _Update.model_validate(call.arguments)
        except ValidationError as exc:
            return ToolResult(f"invalid plan_update: {exc.errors()[0]['msg']}", is_error=True)
        return self._apply(update)

    def _apply(self, update: _Update) -> ToolResult:
        steps = {s.id: s for s in self.plan.steps}
        unknown = [i for i in update.skip if i not in steps or steps[i].status != "pending"]
        if unknown:
            return ToolResult(f"only pending todos can be skipped: {', '.join(unknown)}", is_error=True)
        if len(self.plan.steps) + len(update.add) > self.max_steps:
            return ToolResult(f"the plan may have at most {self.max_steps} todos", is_error=True)
        for todo_id in update.skip:
            step = steps[todo_id]
            step.status = "skipped"
            self.journal.event(PlanStepCompleted(todo_id=step.id, title=step.title, status="skipped", output=""))
        if update.add:
            start = len(self.plan.steps) + 1
            self.plan.steps += [Step(f"todo_{start + i}", t.title) for i, t in enumerate(update.add)]
            self.journal.event(PlanCreated(todos=[PlanTodo(id=s.id, title=s.title) for s in self.plan.steps]))
        return ToolResult(_summary(self.plan))


def _summary(plan: Plan) -> str:
    return "the plan is now:\n" + plan.outline(plan.running())
