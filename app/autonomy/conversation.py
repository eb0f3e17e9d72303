"""The conversation an autonomous turn's steps see, and how it is rebuilt from what is stored.

A step's goal ("Now do only this step: …") is part of its prompt but is never stored: the session's
conversation keeps the user's input and the model's and tools' messages only. A run that goes on
from the database (an approval's decision, a continuation after a crash) reads the turn's stored
messages and splits them by step: first the PLAN reply (two when the first was invalid), then the
steps in the order they ran (plan order; skipped todos have none). A step that ended `done` ended
with exactly one assistant message without tool calls, and no other message of a step is one, so
counting those finds each step's end. What follows the last done step belongs to the running step,
or, once every step is done, is the closing summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.autonomy.plan import Plan, PlanInvalid, Step, parse_plan
from app.providers.base import ChatMessage


def goal(plan: Plan, step: Step, request: str) -> ChatMessage:
    """The user message that opens a step: the request, the plan, the todo's position, earlier steps' outputs.

    It names the request itself: a runtime that never saw the PLAN call (a Claude Code session) gets it here.
    """
    position = plan.steps.index(step) + 1
    text = (
        f"You are carrying out step {position} of {len(plan.steps)} of a plan for this request: {request}\n"
        f"The plan:\n{plan.outline(step)}\n\nEarlier steps' outputs:\n{plan.outputs() or '(none yet)'}\n\n"
        f"Now do only this step: {step.title}"
    )
    return ChatMessage(role="user", content=text)


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """An autonomous turn's stored conversation, split by what produced each message."""

    before: list[ChatMessage]
    """The session's conversation up to and including this turn's input."""
    plan: list[ChatMessage]
    """The PLAN call's replies (none while no plan is stored)."""
    done: list[list[ChatMessage]]
    """The messages of each step that ended `done`, in the order they ran."""
    rest: list[ChatMessage]
    """After the last done step: the running step's messages so far, or the closing summary."""

    @classmethod
    def of(cls, history: list[ChatMessage], plan: Plan) -> StoredTurn:
        start = max((i for i, m in enumerate(history) if m.role == "user"), default=-1) + 1
        before, mine = history[:start], history[start:]
        if not plan.steps:
            return cls(before, [], [], [])
        planned = 2 if mine and _invalid_plan(mine[0]) and len(mine) > 1 else min(len(mine), 1)
        rest = mine[planned:]
        done: list[list[ChatMessage]] = []
        for _ in (s for s in plan.steps if s.status == "done"):
            end = next((i for i, m in enumerate(rest) if _ends_step(m)), len(rest) - 1)
            done.append(rest[: end + 1])
            rest = rest[end + 1 :]
        return cls(before, mine[:planned], done, rest)

    def conversation(self, plan: Plan, running: Step | None, request: str) -> list[ChatMessage]:
        """What the next prompt goes on from: each done step after its goal, then the running step's
        goal and messages (`running` only when it has stored messages to go on from)."""
        steps = [s for s in plan.steps if s.status == "done"]
        messages = [*self.before, *self.plan]
        for step, stored in zip(steps, self.done, strict=False):
            messages += [goal(plan, step, request), *stored]
        if running is not None:
            messages += [goal(plan, running, request), *self.rest]
        return messages

    @property
    def loops(self) -> int:
        """The inner loop's rounds the stored steps completed (the PLAN and summary calls are none). A done
        step's every reply was a round; of the running step's, those whose every tool call has its result
        stored (its final reply, if stored, becomes a round when the inner continuation closes the step).
        A continuation's loop index goes on from here, so its ledger rows count on as the lost run's did."""
        running = [] if self.summary is not None else self.rest
        answered = {m.tool_call_id for m in running if m.role == "tool"}
        done = sum(1 for stored in self.done for m in stored if m.role == "assistant")
        return done + sum(
            1 for m in running if m.role == "assistant" and m.tool_calls and all(c.id in answered for c in m.tool_calls)
        )

    @property
    def summary(self) -> str | None:
        """The closing summary's text, if it was stored after every step was done."""
        return self.rest[0].content if len(self.rest) == 1 and _ends_step(self.rest[0]) else None


def _ends_step(message: ChatMessage) -> bool:
    return message.role == "assistant" and not message.tool_calls


def _invalid_plan(message: ChatMessage) -> bool:
    try:
        parse_plan(message.content)
    except PlanInvalid:
        return True
    return False
