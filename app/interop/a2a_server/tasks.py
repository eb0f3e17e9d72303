"""A turn as an A2A task: its state, its status message, its answer as an artifact, its stream of events.

running → `working` (queued → `submitted`), interrupted → `input-required` with the pending approvals
as a data part, completed → `completed`, failed / budget_exceeded / loop_limit → `failed` with our code
in the message, cancelled → `canceled`. Text deltas stream as `working` status messages; the answer
is one artifact (`answer`) when the turn ends.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from a2a.types import (
    Artifact,
    DataPart,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)

from app.approvals.schemas import Approval
from app.interop.door import Door
from app.turns.schemas import Turn

STATES: dict[str, TaskState] = {
    "queued": TaskState.submitted,
    "running": TaskState.working,
    "interrupted": TaskState.input_required,
    "completed": TaskState.completed,
    "loop_limit": TaskState.failed,
    "budget_exceeded": TaskState.failed,
    "failed": TaskState.failed,
    "cancelled": TaskState.canceled,
}
ANSWER = "answer"
Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def _agent_message(task_id: str, context_id: str, parts: list[Part]) -> Message:
    return Message(role=Role.agent, parts=parts, message_id=str(uuid.uuid4()), task_id=task_id, context_id=context_id)


def _text(text: str) -> Part:
    return Part(root=TextPart(text=text))


def approval_data(pending: list[Approval]) -> dict[str, Any]:
    """What an `input-required` task waits for: answer with `{"decisions": [...]}` in a data part."""
    return {
        "approvals": [
            {"approval_id": str(a.id), "name": a.name, "arguments": a.arguments, "reason": a.reason} for a in pending
        ]
    }


def status_of(turn: Turn, context_id: str, pending: list[Approval]) -> TaskStatus:
    state = STATES[turn.status]
    task_id = str(turn.id)
    message = None
    if state is TaskState.input_required:
        parts = [_text("The task awaits approval of a tool call."), Part(root=DataPart(data=approval_data(pending)))]
        message = _agent_message(task_id, context_id, parts)
    elif state is TaskState.failed or state is TaskState.canceled:
        code = turn.error.code if turn.error else turn.status
        detail = turn.error.message if turn.error else f"the turn ended {turn.status}"
        message = _agent_message(task_id, context_id, [_text(f"{code}: {detail}")])
    when = (turn.ended_at or turn.created_at).isoformat()
    return TaskStatus(state=state, message=message, timestamp=when)


def answer_of(turn: Turn) -> Artifact | None:
    if turn.status in ("queued", "running", "interrupted") or not turn.final_output:
        return None
    return Artifact(artifact_id=ANSWER, name="answer", parts=[_text(turn.final_output)])


def task_of(turn: Turn, context_id: str, pending: list[Approval]) -> Task:
    answer = answer_of(turn)
    user = Message(
        role=Role.user, parts=[_text(turn.input)], message_id=f"{turn.id}-input", task_id=str(turn.id),
        context_id=context_id,
    )  # fmt: skip
    return Task(
        id=str(turn.id),
        context_id=context_id,
        status=status_of(turn, context_id, pending),
        artifacts=[answer] if answer else None,
        history=[user],
        metadata={"channel": turn.channel, "status": turn.status, "usage": turn.usage.model_dump()},
    )


async def current(door: Door, turn_id: uuid.UUID, context_id: str | None = None, *, pending: bool = True) -> Task:
    """The task as `tasks/get` shows it now (`pending`: with the approvals an input-required one waits for)."""
    turn = await door.turn(turn_id)
    if context_id is None:
        context_id = (await door.conversation(turn.session_id)).name
    waiting = await door.pending(turn_id) if pending and turn.status == "interrupted" else []
    return task_of(turn, context_id, waiting)


def working(turn_id: uuid.UUID, context_id: str, text: str) -> TaskStatusUpdateEvent:
    message = _agent_message(str(turn_id), context_id, [_text(text)])
    return TaskStatusUpdateEvent(
        task_id=str(turn_id), context_id=context_id, status=TaskStatus(state=TaskState.working, message=message),
        final=False,
    )  # fmt: skip


def ending(turn: Turn, context_id: str, pending: list[Approval]) -> list[Event]:
    """The last events of a stream: the answer (when there is one), then the final status."""
    events: list[Event] = []
    answer = answer_of(turn)
    if answer is not None:
        events.append(
            TaskArtifactUpdateEvent(task_id=str(turn.id), context_id=context_id, artifact=answer, last_chunk=True)
        )
    status = status_of(turn, context_id, pending)
    events.append(TaskStatusUpdateEvent(task_id=str(turn.id), context_id=context_id, status=status, final=True))
    return events


async def deltas(events: AsyncGenerator[dict[str, Any], None]) -> AsyncGenerator[str, None]:
    """The text deltas of a turn's stored events, to its run's end."""
    async with contextlib.aclosing(events):
        async for event in events:
            if event["type"] == "message.delta" and event.get("text"):
                yield event["text"]
