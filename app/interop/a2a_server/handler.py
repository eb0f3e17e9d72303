"""The A2A request handler: each JSON-RPC method of one agent, answered by its turns through the door.

A task is a turn and `contextId` a session (get-or-create by it, or the session's id). The client's
next message with a data part `{"decisions": [...]}` (the shape of `POST /turns/{id}/approvals`)
answers an `input-required` task and resumes the turn. `tasks/resubscribe` replays the task from its
stored events, then follows it live, so a client that dropped (or whose replica died) sees it all.
Push notification configs (`tasks/pushNotificationConfig/*`, or `configuration.pushNotificationConfig`
of a message) are stored per task and delivered through the webhook outbox (`push.py`).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    DataPart,
    DeleteTaskPushNotificationConfigParams,
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigParams,
    Message,
    MessageSendParams,
    PushNotificationConfig,
    Task,
    TaskIdParams,
    TaskNotCancelableError,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TextPart,
)
from a2a.utils.errors import ServerError
from pydantic import TypeAdapter, ValidationError

from app.agents.schemas import Agent
from app.approvals.schemas import BatchDecisionItem
from app.errors import Conflict, NotFound
from app.interop.a2a_server import tasks
from app.interop.a2a_server.errors import as_rpc_errors, invalid, not_found, push_not_supported
from app.interop.a2a_server.push import PushConfigs
from app.interop.door import Call, Door
from app.models import ACTIVE_STATUSES
from app.turns.schemas import Turn

_DECISIONS = TypeAdapter(list[BatchDecisionItem])


@dataclass(frozen=True, slots=True)
class Begun:
    """What a message set going: the task, its context's name, and the run to follow (None: nothing runs)."""

    turn_id: uuid.UUID
    context_id: str
    call: Call | None


class TurnTasks(RequestHandler):
    def __init__(self, door: Door, agent: Agent, push: PushConfigs | None = None) -> None:
        """`push`: the task's push notification configs, None when this service sends none."""
        self.door = door
        self.agent = agent
        self.push = push

    async def on_message_send(self, params: MessageSendParams, context: ServerCallContext | None = None) -> Task:
        with as_rpc_errors():
            begun = await self._begin_with_push(params)
            blocking = params.configuration is None or params.configuration.blocking is not False
            if begun.call is not None:
                async with contextlib.aclosing(begun.call.events) as events:
                    if blocking:
                        async for _ in events:
                            pass
            return await self._task(begun.turn_id, begun.context_id)

    async def on_message_send_stream(
        self, params: MessageSendParams, context: ServerCallContext | None = None
    ) -> AsyncGenerator[tasks.Event, None]:
        with as_rpc_errors():
            begun = await self._begin_with_push(params)
        async for event in self._stream(begun):
            yield event

    async def on_get_task(self, params: TaskQueryParams, context: ServerCallContext | None = None) -> Task | None:
        with as_rpc_errors():
            found = await self._own(params.id)
            return None if found is None else await self._task(found[0].id, found[1])

    async def on_cancel_task(self, params: TaskIdParams, context: ServerCallContext | None = None) -> Task | None:
        with as_rpc_errors():
            found = await self._own(params.id)
            if found is None:
                return None
            turn, context_id = found
            try:
                await self.door.cancel(turn.id)
            except Conflict as exc:
                raise ServerError(error=TaskNotCancelableError(message=exc.detail)) from None
            return await self._task(turn.id, context_id)

    async def on_resubscribe_to_task(
        self, params: TaskIdParams, context: ServerCallContext | None = None
    ) -> AsyncGenerator[tasks.Event, None]:
        with as_rpc_errors():
            found = await self._own(params.id)
            if found is None:
                raise not_found(params.id)
            turn, context_id = found
            call = await self.door.follow(turn.id, 0)
        async for event in self._stream(Begun(turn.id, context_id, call)):
            yield event

    async def _stream(self, begun: Begun) -> AsyncGenerator[tasks.Event, None]:
        with as_rpc_errors():
            yield await self._task(begun.turn_id, begun.context_id, pending=False)
            if begun.call is not None:
                async with contextlib.aclosing(tasks.deltas(begun.call.events)) as texts:
                    async for text in texts:
                        yield tasks.working(begun.turn_id, begun.context_id, text)
            turn = await self.door.turn(begun.turn_id)
            pending = await self.door.pending(turn.id) if turn.status == "interrupted" else []
        for event in tasks.ending(turn, begun.context_id, pending):
            yield event

    async def _task(self, turn_id: uuid.UUID, context_id: str, *, pending: bool = True) -> Task:
        return await tasks.current(self.door, turn_id, context_id, pending=pending)

    async def _own(self, task_id: str) -> tuple[Turn, str] | None:
        """The turn this task id names, when it is one of this agent's that the caller may see."""
        try:
            turn = await self.door.turn(uuid.UUID(task_id))
        except (ValueError, NotFound):
            return None
        conversation = await self.door.conversation(turn.session_id)
        if conversation.agent_id != self.agent.id:
            return None
        return turn, conversation.name

    async def _begin_with_push(self, params: MessageSendParams) -> Begun:
        """The message's task, with the configuration's push notification config registered on it
        (checked before anything runs: a config refused starts no turn)."""
        config = params.configuration.push_notification_config if params.configuration else None
        if config is None:
            return await self._begin(params.message)
        push = self._push()
        await push.check(config)
        begun = await self._begin(params.message)
        await push.save(begun.turn_id, config)
        return begun

    def _push(self) -> PushConfigs:
        if self.push is None:
            raise push_not_supported()
        return self.push

    async def _begin(self, message: Message) -> Begun:
        text = "".join(p.root.text for p in message.parts if isinstance(p.root, TextPart))
        data = [p.root.data for p in message.parts if isinstance(p.root, DataPart)]
        decisions = next((d["decisions"] for d in data if "decisions" in d), None)
        if decisions is not None:
            return await self._answer(message, decisions)
        if message.task_id:
            found = await self._own(message.task_id)
            if found is None:
                raise not_found(message.task_id)
            turn, context_id = found
            if turn.status not in ACTIVE_STATUSES:
                raise invalid(f"Task {turn.id} is {tasks.STATES[turn.status].value}: send a new message without taskId")
            return Begun(turn.id, context_id, await self.door.latest_run(turn.id))
        if not text.strip():
            raise invalid("The message has no text part")
        session_id = await self.door.session(self.agent.id, message.context_id)
        call = await self.door.ask(session_id, text)
        return Begun(call.turn_id, (await self.door.conversation(session_id)).name, call)

    async def _answer(self, message: Message, decisions: Any) -> Begun:
        """The decisions of a data part, on the message's task (or the context's task that waits for them)."""
        try:
            items = _DECISIONS.validate_python(decisions)
        except ValidationError as exc:
            raise invalid("decisions: each needs approval_id and decision approve or deny", exc.errors()) from None
        if not items:
            raise invalid("decisions must not be empty")
        task_id = message.task_id or await self._waiting_in(message.context_id)
        found = await self._own(task_id) if task_id else None
        if found is None:
            raise not_found(task_id or "")
        turn, context_id = found
        return Begun(turn.id, context_id, await self.door.decide(turn.id, items))

    async def _waiting_in(self, context_id: str | None) -> str | None:
        if not context_id:
            return None
        latest = await self.door.latest(await self.door.session(self.agent.id, context_id))
        return str(latest.id) if latest is not None and latest.status == "interrupted" else None

    async def on_set_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext | None = None
    ) -> TaskPushNotificationConfig:
        push = self._push()
        with as_rpc_errors():
            turn = await self._owned(params.task_id)
            await push.check(params.push_notification_config)
            saved = await push.save(turn.id, params.push_notification_config)
        return TaskPushNotificationConfig(task_id=params.task_id, push_notification_config=saved)

    async def on_get_task_push_notification_config(
        self,
        params: TaskIdParams | GetTaskPushNotificationConfigParams,
        context: ServerCallContext | None = None,
    ) -> TaskPushNotificationConfig:
        push = self._push()
        config_id = (
            params.push_notification_config_id if isinstance(params, GetTaskPushNotificationConfigParams) else None
        )
        with as_rpc_errors():
            turn = await self._owned(params.id)
            found: PushNotificationConfig | None = await push.get(turn.id, config_id)
        if found is None:
            raise invalid(f"Task {params.id} has no push notification config {config_id or params.id}")
        return TaskPushNotificationConfig(task_id=params.id, push_notification_config=found)

    async def on_list_task_push_notification_config(
        self, params: ListTaskPushNotificationConfigParams, context: ServerCallContext | None = None
    ) -> list[TaskPushNotificationConfig]:
        push = self._push()
        with as_rpc_errors():
            turn = await self._owned(params.id)
            configs = await push.list(turn.id)
        return [TaskPushNotificationConfig(task_id=params.id, push_notification_config=c) for c in configs]

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigParams, context: ServerCallContext | None = None
    ) -> None:
        push = self._push()
        with as_rpc_errors():
            turn = await self._owned(params.id)
            await push.delete(turn.id, params.push_notification_config_id)

    async def _owned(self, task_id: str) -> Turn:
        found = await self._own(task_id)
        if found is None:
            raise not_found(task_id)
        return found[0]
