"""The Vercel AI SDK's UI message stream (protocol `v1`): a turn's events as the chunks `useChat` reads.

| our event | UI message stream chunk |
|---|---|
| (start of the stream) | `start` (messageId = the turn id, so a resumed run continues the same message) |
| `message.delta`, `message.completed` | `text-start`, `text-delta`…, `text-end` |
| `tool_call.requested` | `tool-input-available` |
| `tool_call.completed` | `tool-output-available` (an error result is still an output: the model saw it) |
| `approval.required` | `data-approval` (id = the approval id; decide it through `POST /approvals/{id}`) |
| `policy.decision` | `data-policy-decision` |
| `turn.resumed` | `data-turn-resumed` (its data and `withdrawn`: `{text_parts, tool_call_ids}`) |
| `turn.ended` | failed: `error`; then `finish` (finishReason, and `messageMetadata` {turn_id, status, usage, error}) |
| `turn.ended` with an `output` | first `data-output` (id = the turn id, data = the parsed object) |
| (end of the stream) | `[DONE]` |

A continued turn (another replica took it over) says at `turn.resumed` what of the stream is
withdrawn (the drop rule, app/core/drop_rule.py). The UI message stream has no chunk that removes a
part, so `data-turn-resumed` names them: the texts of the withdrawn text parts (a part is withdrawn
whole) and the ids of the withdrawn tool parts; an app removes those parts before it (`onData`).
A result reported again replaces the part's output, as the protocol does for a repeated
`tool-output-available`; the reply made again is a new text part; the stream keeps its one `start`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import orjson

from app.adapters.passed_on import PassedOn, refs

STREAM_HEADER = {"x-vercel-ai-ui-message-stream": "v1"}
DONE = b"data: [DONE]\n\n"
FINISH_REASONS = {"completed": "stop", "loop_limit": "length", "budget_exceeded": "length", "failed": "error"}


def encode(chunk: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


class AiSdkRun:
    """Translates the events of one run, in order."""

    def __init__(self, *, message_id: str) -> None:
        self.message_id = message_id
        self._text_id: str | None = None
        self._texts: dict[str, str] = {}
        self._passed = PassedOn()

    def started(self) -> list[dict[str, Any]]:
        return [{"type": "start", "messageId": self.message_id}]

    def translate(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event["type"]
        if kind == "message.delta":
            return self._text(event["text"], event)
        if kind == "message.completed":
            if self._text_id is None and event.get("text"):
                return [*self._text(event["text"], event), *self._close_text()]
            if self._text_id is not None:
                self._passed.add(event, self._text_id)
            return self._close_text()
        if kind == "tool_call.requested":
            return self._tool_call(event)
        if kind == "tool_call.completed":
            self._passed.add(event, event["tool_call_id"])
            return [{"type": "tool-output-available", "toolCallId": event["tool_call_id"], "output": event["result"]}]
        if kind == "turn.resumed":
            return self._resumed(event)
        if kind == "approval.required":
            return [{"type": "data-approval", "id": str(event["approval_id"]), "data": event}]
        if kind == "policy.decision":
            return [{"type": "data-policy-decision", "data": event}]
        if kind == "turn.ended":
            return self._ended(event)
        return []

    def _text(self, delta: str, event: dict[str, Any]) -> list[dict[str, Any]]:
        chunks: list[dict[str, Any]] = []
        if self._text_id is None:
            self._text_id = str(uuid.uuid4())
            self._texts[self._text_id] = ""
            chunks.append({"type": "text-start", "id": self._text_id})
        if delta:
            self._texts[self._text_id] += delta
            chunks.append({"type": "text-delta", "id": self._text_id, "delta": delta})
        self._passed.add(event, self._text_id)
        return chunks

    def _tool_call(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        call_id = event["tool_call_id"]
        if self._passed.has("tool_call.requested", call_id):
            return []
        self._passed.add(event, call_id)
        call = {"type": "tool-input-available", "toolCallId": call_id, "toolName": event["name"]}
        return [*self._close_text(), {**call, "input": event.get("arguments") or {}}]

    def _resumed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        closing = self._close_text()
        taken = self._passed.withdraw(event)
        texts = [self._texts.pop(text_id) for text_id in refs(taken, "message.delta", "message.completed")]
        withdrawn = {"text_parts": texts, "tool_call_ids": refs(taken, "tool_call.requested")}
        return [*closing, {"type": "data-turn-resumed", "id": f"turn-resumed-{event['seq']}",
                           "data": {**event, "withdrawn": withdrawn}}]  # fmt: skip

    def _close_text(self) -> list[dict[str, Any]]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [{"type": "text-end", "id": text_id}]

    def _ended(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        status = event["status"]
        error = event.get("error")
        chunks = self._close_text()
        if event.get("output") is not None:
            chunks.append({"type": "data-output", "id": str(event["turn_id"]), "data": event["output"]})
        if status == "failed":
            chunks.append({"type": "error", "errorText": (error or {}).get("message") or "The turn failed"})
        metadata = {"turn_id": event["turn_id"], "status": status, "usage": event.get("usage"), "error": error}
        reason = FINISH_REASONS.get(status, "other")
        chunks.append({"type": "finish", "finishReason": reason, "messageMetadata": metadata})
        return chunks


def user_text(messages: list[Any]) -> str | None:
    """The text parts of the last message when it is the user's (`useChat`'s UIMessage), else None."""
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        return None
    parts = messages[-1].get("parts") or []
    text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
    if not text and isinstance(messages[-1].get("content"), str):
        text = messages[-1]["content"]
    return text or None


async def frames(run: AiSdkRun, events: AsyncGenerator[dict[str, Any], None]) -> AsyncIterator[bytes]:
    """The run's UI message stream: `start`, each event translated, `[DONE]` (the follower closed on every path)."""
    yield b"".join(encode(c) for c in run.started())
    async with aclosing(events):
        async for event in events:
            translated = run.translate(event)
            if translated:
                yield b"".join(encode(c) for c in translated)
    yield DONE
