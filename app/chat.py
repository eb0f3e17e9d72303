"""`agent-runtime chat`: a terminal conversation over the service's own HTTP API.

Errors are said in a sentence (server down, token refused, unknown session), never as a traceback
or raw JSON; the session is checked (or created with `--agent`) before the first prompt.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import httpx

from app.chat_turn import LostStream, TurnView, follow_to_the_end


class ChatError(Exception):
    """Something the user can act on; printed as one line, exit status 1."""


def _problem(response: httpx.Response) -> str:
    """One line out of a problem+json body (or whatever the server sent)."""
    try:
        body = json.loads(response.read())
    except ValueError:
        return f"HTTP {response.status_code}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    detail = body.get("detail") or body.get("title") or ""
    return f"{body.get('title', 'HTTP error')} ({response.status_code}): {detail}"


def _show(client: httpx.Client, url: str, body: dict[str, Any]) -> TurnView:
    """Stream one turn (or resume) to the terminal, reconnecting if its stream is cut; returns what it showed."""
    view = TurnView()
    try:
        with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
            if response.status_code == 202:
                print("  (recorded; other approvals of this step still wait)")
                return view
            if response.status_code >= 400:
                print(f"error: {_problem(response)}", file=sys.stderr)
                return view
            view.read(response)
    except httpx.TransportError:
        if view.turn_id is None:
            raise  # nothing started that could be picked up: the service is not there
    follow_to_the_end(client, view)
    return view


def _decide(client: httpx.Client, approvals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    follow_up: list[dict[str, Any]] = []
    for item in approvals:
        reason = f" — {item['reason']}" if item.get("reason") else ""
        print(f"\napproval needed{reason}")
        answer = input(f"approve {item['name']}({json.dumps(item['arguments'])})? [y/N] ").strip().lower()
        decision = "approve" if answer in ("y", "yes") else "deny"
        follow_up = _show(client, f"/approvals/{item['approval_id']}", {"decision": decision}).asked
    return follow_up


def _request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
    response = client.request(method, url, **kwargs)
    if response.status_code == 401:
        raise ChatError(f"the service refused the token: {_problem(response)}")
    if response.status_code >= 400:
        raise ChatError(_problem(response))
    return dict(response.json())


def _open_session(client: httpx.Client, session_id: str | None, agent_id: str | None) -> str:
    if agent_id is not None:
        session = _request(client, "POST", "/sessions", json={"agent_id": agent_id})
        print(f"session {session['id']} on agent {agent_id} (version {session['agent_version']})")
        return str(session["id"])
    assert session_id is not None
    session = _request(client, "GET", f"/sessions/{session_id}")
    if session["status"] != "open":
        raise ChatError(f"session {session_id} is {session['status']}; start another with --agent AGENT_ID")
    return session_id


def _converse(client: httpx.Client, session_id: str) -> int:
    while True:
        try:
            text = input("you> ").strip()
        except EOFError:
            return 0
        if not text:
            continue
        pending = _show(client, f"/sessions/{session_id}/turns", {"input": text}).asked
        while pending:
            pending = _decide(client, pending)


def run_chat(session_id: str | None, *, base_url: str, token: str | None, agent_id: str | None = None) -> int:
    token = token or os.environ.get("AGENT_RUNTIME_TOKEN")
    if not token:
        print("pass --token or set AGENT_RUNTIME_TOKEN (see `agent-runtime token`)", file=sys.stderr)
        return 2
    if (session_id is None) == (agent_id is None):
        print("name a SESSION_ID, or --agent AGENT_ID to start a new session", file=sys.stderr)
        return 2
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=base_url, headers=headers, timeout=httpx.Timeout(10, read=None)) as client:
            return _converse(client, _open_session(client, session_id, agent_id))
    except (ChatError, LostStream) as exc:
        print(f"error: {exc}", file=sys.stderr)
    except httpx.TransportError as exc:
        print(f"error: cannot reach the service at {base_url} ({type(exc).__name__}); is it running?", file=sys.stderr)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return 1
