"""AG-UI (https://docs.ag-ui.com): a turn's events as AG-UI events, typed by `ag-ui-protocol`.

| our event | AG-UI |
|---|---|
| (start of the stream) | `RUN_STARTED` |
| `node.started` / `node.ended`, `plan.step.started` / `plan.step.completed` | `STEP_STARTED` / `STEP_FINISHED` |
| `message.delta`, `message.completed` | `TEXT_MESSAGE_START`, `TEXT_MESSAGE_CONTENT`…, `TEXT_MESSAGE_END` |
| `tool_call.requested` | `TOOL_CALL_START`, `TOOL_CALL_ARGS` (the arguments as JSON), `TOOL_CALL_END` |
| `tool_call.completed` | `TOOL_CALL_RESULT` |
| `approval.required`, `policy.decision` | `CUSTOM` named after the event, its data as the value |
| `turn.resumed` | `CUSTOM` (data + `withdrawn_message_ids`), and `MESSAGES_SNAPSHOT` when it withdrew any |
| `turn.ended` completed | `RUN_FINISHED` with the final output as `result` (a structured turn: its parsed `output`) |
| `turn.ended` interrupted | `RUN_FINISHED`, outcome `interrupt`: one interrupt per approval (id = the approval id) |
| `turn.ended` cancelled | `RUN_FINISHED`, outcome `cancelled` |
| `turn.ended` failed, loop_limit, budget_exceeded | `RUN_ERROR` (message, code = the error code or the status) |

Everything else (usage, context, plan.created) has no AG-UI counterpart and is left out.
Steps and messages still open when the turn ends are closed first, as the protocol requires.

A continued turn (another replica took it over) says at `turn.resumed` what of the stream is
withdrawn (the drop rule, app/core/drop_rule.py): the reply that was streaming and anything past the
last stored event. AG-UI cannot retract an event, but a `MESSAGES_SNAPSHOT` replaces the client's
messages: it lists the run's input messages and this run's messages without the withdrawn ones, so
an `HttpAgent` ends up with what the service stored. The run stays one run (one `RUN_STARTED`); the
reply made again is a new text message. A call or result the continuation reports again is not
passed on twice.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from ag_ui.core import (
    ToolCall as AgUiToolCall,
)

from app.adapters.passed_on import PassedOn, refs

CUSTOM_EVENTS = frozenset({"approval.required", "policy.decision"})
FINISHED = frozenset({"completed", "interrupted", "cancelled"})


def encode(event: BaseEvent) -> bytes:
    """One SSE frame, as `ag_ui.encoder.EventEncoder` writes it (camelCase, optional fields left out)."""
    return b"data: " + event.model_dump_json(by_alias=True).encode() + b"\n\n"


class AgUiRun:
    """Translates the events of one run, in order; keeps what the protocol needs closed at the end."""

    def __init__(self, *, thread_id: str, run_id: str, messages: Sequence[Message] = ()) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._input = list(messages)
        self._message_id: str | None = None
        self._steps: list[str] = []
        self._interrupts: list[Interrupt] = []
        self._passed = PassedOn()
        self._messages: dict[str, Message | str] = {}
        """This run's messages by id as the client builds them from the events passed on (text: its content)."""

    def started(self) -> list[BaseEvent]:
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def translate(self, event: dict[str, Any]) -> list[BaseEvent]:
        kind = event["type"]
        if kind in ("node.started", "plan.step.started"):
            return self._step_started(_step_name(event))
        if kind in ("node.ended", "plan.step.completed"):
            return self._step_finished(_step_name(event))
        if kind == "message.delta":
            return self._text(event["text"], event)
        if kind == "message.completed":
            return self._message_completed(event)
        if kind == "tool_call.requested":
            return self._tool_call(event)
        if kind == "tool_call.completed":
            return self._tool_result(event)
        if kind == "turn.resumed":
            return self._resumed(event)
        if kind in CUSTOM_EVENTS:
            if kind == "approval.required":
                self._interrupts.append(_interrupt(event))
            return [CustomEvent(name=kind, value=event)]
        if kind == "turn.ended":
            return self._ended(event)
        return []

    def _step_started(self, name: str) -> list[BaseEvent]:
        if name in self._steps:
            return []
        self._steps.append(name)
        return [StepStartedEvent(step_name=name)]

    def _step_finished(self, name: str) -> list[BaseEvent]:
        if name not in self._steps:
            return []  # a replay that began inside this step
        self._steps.remove(name)
        return [StepFinishedEvent(step_name=name)]

    def _text(self, delta: str, event: dict[str, Any]) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if self._message_id is None:
            self._message_id = str(uuid.uuid4())
            self._messages[self._message_id] = ""
            events.append(TextMessageStartEvent(message_id=self._message_id, role="assistant"))
        if delta:
            self._messages[self._message_id] = f"{self._messages[self._message_id]}{delta}"
            events.append(TextMessageContentEvent(message_id=self._message_id, delta=delta))
        self._passed.add(event, self._message_id)
        return events

    def _message_completed(self, event: dict[str, Any]) -> list[BaseEvent]:
        if self._message_id is None:
            text = event.get("text") or ""
            if not text:
                return []
            return [*self._text(text, event), *self._close_text()]
        self._passed.add(event, self._message_id)
        return self._close_text()

    def _close_text(self) -> list[BaseEvent]:
        if self._message_id is None:
            return []
        message_id, self._message_id = self._message_id, None
        return [TextMessageEndEvent(message_id=message_id)]

    def _tool_call(self, event: dict[str, Any]) -> list[BaseEvent]:
        call_id = event["tool_call_id"]
        if self._passed.has("tool_call.requested", call_id):
            return []
        arguments = json.dumps(event.get("arguments") or {})
        call = AgUiToolCall(id=call_id, function=FunctionCall(name=event["name"], arguments=arguments))
        self._messages[call_id] = AssistantMessage(id=call_id, tool_calls=[call])  # no parent id: as the client does
        self._passed.add(event, call_id)
        return [
            *self._close_text(),
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=event["name"]),
            ToolCallArgsEvent(tool_call_id=call_id, delta=arguments),
            ToolCallEndEvent(tool_call_id=call_id),
        ]

    def _tool_result(self, event: dict[str, Any]) -> list[BaseEvent]:
        call_id = event["tool_call_id"]
        if self._passed.has("tool_call.completed", call_id):
            return []
        content = event["result"] if isinstance(event["result"], str) else json.dumps(event["result"])
        result = ToolMessage(id=str(uuid.uuid4()), tool_call_id=call_id, content=content)
        self._messages[result.id] = result
        self._passed.add(event, call_id)
        return [ToolCallResultEvent(message_id=result.id, tool_call_id=call_id, content=content, role="tool")]

    def _resumed(self, event: dict[str, Any]) -> list[BaseEvent]:
        """Close the reply that was streaming; say what is withdrawn, and correct the client's messages."""
        closing = self._close_text()
        taken = self._passed.withdraw(event)
        texts = refs(taken, "message.delta", "message.completed")
        results = {r["ref"] for r in taken if r["type"] == "tool_call.completed"}
        gone = [*texts, *refs(taken, "tool_call.requested")]
        gone += [i for i, m in self._messages.items() if isinstance(m, ToolMessage) and m.tool_call_id in results]
        for message_id in gone:
            self._messages.pop(message_id, None)
        custom = CustomEvent(name="turn.resumed", value={**event, "withdrawn_message_ids": gone})
        if not gone:
            return [*closing, custom]
        kept = [AssistantMessage(id=i, content=m) if isinstance(m, str) else m for i, m in self._messages.items()]
        snapshot = MessagesSnapshotEvent(messages=[*self._input, *kept])
        return [*closing, custom, snapshot]

    def _ended(self, event: dict[str, Any]) -> list[BaseEvent]:
        closing = [*self._close_text(), *(StepFinishedEvent(step_name=s) for s in reversed(self._steps))]
        self._steps.clear()
        status = event["status"]
        if status not in FINISHED:
            error = event.get("error") or {}
            message = error.get("message") or f"The turn ended {status}"
            return [*closing, RunErrorEvent(message=message, code=error.get("code") or status)]
        outcome: RunFinishedInterruptOutcome | RunFinishedCancelledOutcome | None = None
        if status == "interrupted" and self._interrupts:
            outcome = RunFinishedInterruptOutcome(interrupts=self._interrupts)
        elif status == "cancelled":
            outcome = RunFinishedCancelledOutcome()
        result = _result(event) if status == "completed" else None
        finished = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, result=result)
        return [*closing, finished]


def _result(event: dict[str, Any]) -> Any:
    """A structured turn's result is its parsed object; any other turn's, its text."""
    output = event.get("output")
    return output if output is not None else event.get("final_output")


def _step_name(event: dict[str, Any]) -> str:
    if event["type"].startswith("plan.step"):
        return f"plan:{event.get('title') or event.get('todo_id')}"
    return str(event["node"])


def _interrupt(event: dict[str, Any]) -> Interrupt:
    return Interrupt(
        id=str(event["approval_id"]),
        reason="approval_required",
        message=event.get("reason") or f"{event['name']} needs a human decision",
        tool_call_id=event["tool_call_id"],
    )


def user_text(messages: list[Any]) -> str | None:
    """The text of the last message when it is the user's (a run that brings new input), else None."""
    if not messages:
        return None
    last = messages[-1]
    if getattr(last, "role", None) != "user":
        return None
    content = last.content
    if isinstance(content, str):
        return content
    texts = [getattr(part, "text", None) for part in content or []]
    return "".join(t for t in texts if isinstance(t, str)) or None


async def frames(run: AgUiRun, events: AsyncGenerator[dict[str, Any], None]) -> AsyncIterator[bytes]:
    """The run's AG-UI stream: `RUN_STARTED`, then each event translated (the follower closed on every path)."""
    yield b"".join(encode(e) for e in run.started())
    async with aclosing(events):
        async for event in events:
            translated = run.translate(event)
            if translated:
                yield b"".join(encode(e) for e in translated)
