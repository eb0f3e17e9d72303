"""Per-turn tokens never leave the wire: not in events, the database or logs, even when a peer echoes them."""

from __future__ import annotations

import logging

import httpx
import pytest
import respx

from tests.integrations.conftest import Integrated
from tests.integrations.support import bearer, new_session, run_turn, stored_text
from tests.mcp_server import Gateway


def _echo_token_in_error(status: int) -> object:
    """A peer that quotes the bearer it was given in its error message."""

    def respond(request: httpx.Request) -> httpx.Response:
        token = bearer(request.headers.get("authorization"))
        return httpx.Response(status, json={"code": "unauthenticated", "message": f"bad token {token}"})

    return respond


def _refuse_naming_token(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"refused for {request.headers.get('authorization')}", request=request)


async def test_tokens_appear_in_no_event_row_or_log_line(
    integrated: Integrated,
    ce: respx.Router,
    gateway: Gateway,
    alice: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    ce.routes["validate"].side_effect = _refuse_naming_token
    ce.routes["ingest"].side_effect = _echo_token_in_error(401)
    client = integrated.client
    step = {
        "tool_calls": [
            {"name": "github__create_issue", "arguments": {"title": "Leak?"}},
            {"name": "github__explode", "arguments": {}},
        ]
    }
    session = await new_session(
        client, alice, step, {"text": "done"}, tools=["mcp:github"], context={"team_unit": "eng"}
    )

    run = await run_turn(client, alice, session, "go")
    replay = (await client.get(f"/turns/{run.turn_id}/events", headers=alice)).text
    stored = await stored_text(integrated.app, session["id"])

    assert run.ended["status"] == "completed"
    assert {d["component"] for d in run.of("context.degraded")} == {"validate", "ingest"}
    assert "[redacted]" in " ".join(d["error"] for d in run.of("context.degraded"))
    tokens = {bearer(c.request.headers.get("authorization")) for c in ce.calls}
    tokens |= {bearer(r.authorization) for r in gateway.requests}
    assert len(tokens) == 2, "one context-engine and one mcp-gateway token"
    logs = "\n".join(record.getMessage() for record in caplog.records)
    for token in tokens:
        signature = token.rsplit(".", 1)[-1]
        for where, text in [("SSE stream", run.raw), ("replay", replay), ("database", stored), ("logs", logs)]:
            assert signature not in text, f"a per-turn token leaked into the {where}"
