"""One turn as `agent-runtime chat` shows it: printed as it streams, kept as the events it showed.

The events are kept so that a hand-over can be honoured: when the stream ends without `turn.ended`
(a draining replica ends it with an SSE `retry:`; a dead one just drops the connection) the chat
reconnects with `Last-Event-ID`, and when the continuation's `turn.resumed` withdraws events (the
drop rule, app/core/drop_rule.py) they leave the record. A terminal cannot unprint, so the user
gets one notice line and then the reply as the continuation makes it again; what the record keeps
(`TurnView.replies`) is what the service stored.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx

from app.core.drop_rule import withdrawn

MAX_RECONNECTS = 5
"""Attempts in a row that bring no new event before the chat gives up on a turn's stream."""
DEFAULT_RETRY_MS = 1000
RETRY = "retry"
"""The pseudo event `frames` yields for an SSE `retry:` line (data: {"ms": N})."""


class LostStream(Exception):
    """The turn's stream could not be picked up again; said to the user in one line."""


def frames(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of an SSE body, and (`RETRY`, {"ms": N}) for a `retry:` line."""
    event, data = "", ""
    for line in response.iter_lines():
        if line.startswith("retry:"):
            value = line.removeprefix("retry:").strip()
            if value.isdigit():
                yield RETRY, {"ms": int(value)}
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data = line.removeprefix("data:").strip()
        elif not line and data:
            yield event, json.loads(data)
            event, data = "", ""


class TurnView:
    """The events of one turn this terminal showed (minus the withdrawn ones), and the approvals asked."""

    def __init__(self) -> None:
        self.turn_id: str | None = None
        self.events: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.ended = False
        self.retry_ms = DEFAULT_RETRY_MS

    @property
    def last_seq(self) -> int:
        return int(self.events[-1]["seq"]) if self.events else 0

    @property
    def replies(self) -> list[str]:
        """The model's replies as kept: each completed reply's text, then the one still streaming."""
        texts: list[str] = []
        streaming: list[str] = []
        for event in self.events:
            if event["type"] == "message.delta":
                streaming.append(event["text"])
            elif event["type"] == "message.completed":
                if event.get("text"):
                    texts.append(event["text"])
                streaming = []
        return [*texts, "".join(streaming)] if streaming else texts

    def read(self, response: httpx.Response) -> None:
        """Shows each new event of a stream (a replay may repeat some: those are skipped)."""
        for event, data in frames(response):
            if event == RETRY:
                self.retry_ms = data["ms"]
            elif int(data.get("seq", 0)) > self.last_seq:
                self.show(data)

    def show(self, data: dict[str, Any]) -> None:
        self.turn_id = self.turn_id or str(data["turn_id"])
        kind = data["type"]
        if kind == "turn.resumed":
            self._withdraw(data)
        elif kind == "tool_call.completed" and self._completed(data["tool_call_id"]):
            return  # a continuation re-reporting a call the record has: printed once
        self.events.append(data)
        _print_event(data, self.asked)
        self.ended = kind == "turn.ended"

    def _completed(self, tool_call_id: str) -> bool:
        return any(e["type"] == "tool_call.completed" and e["tool_call_id"] == tool_call_id for e in self.events)

    def _withdraw(self, resumed: dict[str, Any]) -> None:
        gone = withdrawn(self.events, resumed)
        dropped = [e for e in self.events if e["seq"] in gone]
        self.events = [e for e in self.events if e["seq"] not in gone]
        text = sum(len(e["text"]) for e in dropped if e["type"] == "message.delta")
        results = sum(1 for e in dropped if e["type"] == "tool_call.completed")
        shown = [f"{text} characters of the reply"] if text else []
        shown += [f"{results} tool result{'s' if results > 1 else ''}"] if results else []
        withdrawn_note = f": {' and '.join(shown)} above are withdrawn and redone below" if shown else ""
        print(f"\n  [the turn moved to another replica ({resumed['reason']}){withdrawn_note}]", flush=True)


def _print_event(data: dict[str, Any], asked: list[dict[str, Any]]) -> None:
    kind = data["type"]
    if kind == "message.delta":
        print(data["text"], end="", flush=True)
    elif kind == "tool_call.completed":
        print(f"\n  [{data['name']}] -> {data['result']}")
    elif kind == "policy.decision" and data.get("verdict") == "deny":
        rule = data.get("decided_by") or (f"policy {data['rule_id']}" if data.get("rule_id") else "policy")
        reason = f": {data['reason']}" if data.get("reason") else ""
        print(f"\n  [{rule}] denied{reason}")
    elif kind == "approval.required":
        asked.append(data)
    elif kind == "turn.ended":
        error = data.get("error")
        suffix = f" ({error['code']}: {error.get('message', '')})" if error else ""
        print(f"\n[{data['status']}{suffix}]")


def follow_to_the_end(client: httpx.Client, view: TurnView) -> None:
    """Reconnects with `Last-Event-ID` until the turn's stream ends with `turn.ended`.

    Each attempt waits the server's `retry:` hint (or a second); attempts that bring no new event
    are bounded, any progress starts the count again.
    """
    failures = 0
    while not view.ended:
        if view.turn_id is None:
            raise LostStream("the stream ended before the turn started; send the message again")
        if failures >= MAX_RECONNECTS:
            raise LostStream(
                f"lost the stream of turn {view.turn_id} ({failures} reconnects brought nothing); it may still "
                f"be running: see GET /turns/{view.turn_id}"
            )
        time.sleep(view.retry_ms / 1000)
        before = view.last_seq
        _reconnect(client, view)
        failures = 0 if view.last_seq > before else failures + 1


def _reconnect(client: httpx.Client, view: TurnView) -> None:
    headers = {"Accept": "text/event-stream", "Last-Event-ID": str(view.last_seq)}
    try:
        with client.stream("GET", f"/turns/{view.turn_id}/events", headers=headers) as response:
            if response.status_code >= 400:
                print(f"  (reconnecting: the service answered HTTP {response.status_code})", file=sys.stderr)
                return
            view.read(response)
    except httpx.TransportError as exc:
        print(f"  (reconnecting: {type(exc).__name__})", file=sys.stderr)
