"""`agent-runtime chat`: a terminal conversation over the service's own HTTP API.

Errors are said in one line (server down, token refused, unknown session or agent), never as a
traceback or raw JSON; the session is checked (or created with `--agent NAME_OR_ID`) before the
first prompt, and approvals it still waits for are asked first.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

import httpx

from app.cli.chat_turn import LostStream, TurnView, follow_to_the_end


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
        body: dict[str, Any] = {"decision": "approve"}
        if answer not in ("y", "yes"):
            why = input("reason for denying (Enter for none)> ").strip()
            body = {"decision": "deny", **({"reason": why} if why else {})}
        follow_up = _show(client, f"/approvals/{item['approval_id']}", body).asked
    return follow_up


def _pending(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    """The approvals the session waits for, in the shape of the `approval.required` events that asked them."""
    page = _request(client, "GET", "/approvals", params={"status": "pending", "session_id": session_id})
    return [
        {"approval_id": a["id"], "name": a["name"], "arguments": a["arguments"], "reason": a.get("reason")}
        for a in page["items"]
    ]


def _request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
    response = client.request(method, url, **kwargs)
    if response.status_code == 401:
        raise ChatError(f"the service refused the token: {_problem(response)}")
    if response.status_code >= 400:
        raise ChatError(_problem(response))
    return dict(response.json())


def _agent_id(client: httpx.Client, agent: str) -> str:
    """An agent id as given, or the id of the caller's agent with that name."""
    try:
        return str(uuid.UUID(agent))
    except ValueError:
        pass
    cursor: str | None = None
    while True:
        page = _request(client, "GET", "/agents", params={"limit": 200, **({"cursor": cursor} if cursor else {})})
        for item in page["items"]:
            if item["name"] == agent:
                return str(item["id"])
        cursor = page.get("next_cursor")
        if not cursor:
            raise ChatError(f"no agent named {agent!r} (nor is it an agent id); see GET /agents")


def _open_session(client: httpx.Client, session_id: str | None, agent: str | None) -> str:
    if agent is not None:
        agent_id = _agent_id(client, agent)
        session = _request(client, "POST", "/sessions", json={"agent_id": agent_id})
        print(f"session {session['id']} on agent {agent_id} (version {session['agent_version']})")
        return str(session["id"])
    assert session_id is not None
    try:
        uuid.UUID(session_id)
    except ValueError:
        raise ChatError(f"{session_id!r} is not a session id (a UUID); start a new one with --agent NAME") from None
    session = _request(client, "GET", f"/sessions/{session_id}")
    if session["status"] != "open":
        raise ChatError(f"session {session_id} is {session['status']}; start another with --agent NAME")
    return session_id


def _converse(client: httpx.Client, session_id: str) -> int:
    pending = _pending(client, session_id)
    if pending:
        print(f"this session waits for {len(pending)} approval{'s' if len(pending) > 1 else ''}")
    while pending:
        pending = _decide(client, pending)
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


def run_chat(session_id: str | None, *, base_url: str, token: str | None, agent: str | None = None) -> int:
    token = token or os.environ.get("AGENT_RUNTIME_TOKEN")
    if not token:
        print("pass --token or set AGENT_RUNTIME_TOKEN (see `agent-runtime token`)", file=sys.stderr)
        return 2
    if (session_id is None) == (agent is None):
        print("name a SESSION_ID, or --agent NAME (or id) to start a new session", file=sys.stderr)
        return 2
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=base_url, headers=headers, timeout=httpx.Timeout(10, read=None)) as client:
            return _converse(client, _open_session(client, session_id, agent))
    except (ChatError, LostStream) as exc:
        print(f"error: {exc}", file=sys.stderr)
    except EOFError:
        print(file=sys.stderr)
        return 0
    except httpx.TransportError as exc:
        print(f"error: cannot reach the service at {base_url} ({type(exc).__name__}); is it running?", file=sys.stderr)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return 1
