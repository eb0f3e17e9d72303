"""`agent-runtime chat SESSION_ID`: a terminal conversation over the service's own HTTP API."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx


def _frames(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    event, data = "", ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data = line.removeprefix("data:").strip()
        elif not line and data:
            yield event, json.loads(data)
            event, data = "", ""


def _show(client: httpx.Client, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Stream one turn (or resume) to the terminal; returns the approvals it asks for."""
    asked: list[dict[str, Any]] = []
    with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
        if response.status_code == 202:
            return []
        if response.status_code >= 400:
            print(f"error {response.status_code}: {response.read().decode()}", file=sys.stderr)
            return []
        for event, data in _frames(response):
            if event == "message.delta":
                print(data["text"], end="", flush=True)
            elif event == "tool_call.completed":
                print(f"\n  [{data['name']}] -> {data['result']}")
            elif event == "approval.required":
                asked.append(data)
            elif event == "turn.ended":
                error = f" ({data['error']['code']})" if data.get("error") else ""
                print(f"\n[{data['status']}{error}]")
    return asked


def _decide(client: httpx.Client, approvals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    follow_up: list[dict[str, Any]] = []
    for item in approvals:
        answer = input(f"approve {item['name']}({json.dumps(item['arguments'])})? [y/N] ").strip().lower()
        decision = "approve" if answer in ("y", "yes") else "deny"
        follow_up = _show(client, f"/approvals/{item['approval_id']}", {"decision": decision})
    return follow_up


def run_chat(session_id: str, *, base_url: str, token: str | None) -> int:
    token = token or os.environ.get("AGENT_RUNTIME_TOKEN")
    if not token:
        print("pass --token or set AGENT_RUNTIME_TOKEN (see `agent-runtime token`)", file=sys.stderr)
        return 2
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=httpx.Timeout(10, read=None)) as client:
        while True:
            try:
                text = input("you> ").strip()
            except EOFError:
                return 0
            if not text:
                continue
            pending = _show(client, f"/sessions/{session_id}/turns", {"input": text})
            while pending:
                pending = _decide(client, pending)
