"""Turns against a Context Engine (respx): the three calls at their nodes, and every failure mode."""

from __future__ import annotations

import httpx
import pytest
import respx

from app.providers.base import ChatMessage
from tests.integrations.conftest import ENGINE_CONTEXT, Integrated
from tests.integrations.support import (
    TURN_CLAIMS,
    audit_records,
    bearer,
    body,
    new_session,
    run_turn,
    verify_token,
)

ECHO_THEN_ANSWER = (
    {"tool_calls": [{"name": "echo", "arguments": {"text": "ping"}}]},
    {"text": "all done"},
)
GUARDRAILS = {"team_unit": "eng", "guardrail_hashes": ["sha256:aaa", "sha256:bbb"]}
ENGINE_SYSTEM = 'Engine system prompt.\n\nTeam layer rule.\n\n<document id="doc-1">\nRunbook body.\n</document>'


def _operation(call: respx.models.Call) -> str:
    return call.request.url.path.rsplit("/", 1)[-1]


async def test_engine_calls_happen_at_their_nodes_with_their_bodies(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    client = integrated.client
    session = await new_session(client, alice, *ECHO_THEN_ANSWER, context=GUARDRAILS)

    run = await run_turn(client, alice, session, "what is new?")

    assert run.ended["status"] == "completed"
    assert run.ended["final_output"] == "all done"
    assert run.of("context.degraded") == []
    assert [_operation(c) for c in ce.calls] == [
        "AssembleContext",
        "ValidatePrompt",
        "IngestEvent",
        "IngestEvent",
        "AssembleContext",
        "ValidatePrompt",
        "IngestEvent",
    ]
    ids = {"session_id": session["id"]}
    assert [body(c.request) for c in ce.routes["assemble"].calls] == 2 * [
        {**ids, "agent_id": session["agent_id"], "query": "what is new?"}
    ]
    assert [body(c.request) for c in ce.routes["validate"].calls] == 2 * [
        {**ids, "guardrail_hashes": ["sha256:aaa", "sha256:bbb"], "prompt": ENGINE_SYSTEM}
    ]
    [call] = run.of("tool_call.requested")
    assert [body(c.request) for c in ce.routes["ingest"].calls] == [
        {
            **ids,
            "turn_id": run.turn_id,
            "loop": 0,
            "event": {
                "kind": "assistant_message",
                "text": "",
                "tool_calls": [{"id": call["tool_call_id"], "name": "echo", "arguments": {"text": "ping"}}],
            },
        },
        {
            **ids,
            "turn_id": run.turn_id,
            "loop": 0,
            "event": {
                "kind": "tool_result",
                "tool_call_id": call["tool_call_id"],
                "name": "echo",
                "content": "ping",
                "is_error": False,
            },
        },
        {
            **ids,
            "turn_id": run.turn_id,
            "loop": 1,
            "event": {
                "kind": "assistant_message",
                "text": "all done",
                "tool_calls": [],
            },
        },
    ]


async def test_every_engine_call_carries_a_turn_token_the_jwks_verifies(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str], tenant: str
) -> None:
    client = integrated.client
    session = await new_session(client, alice, *ECHO_THEN_ANSWER)

    run = await run_turn(client, alice, session, "hello")

    tokens = {bearer(c.request.headers.get("authorization")) for c in ce.calls}
    assert len(ce.calls) == 7
    assert len(tokens) == 1, "one token serves the whole turn while it is fresh"
    claims = await verify_token(client, tokens.pop(), "context-engine")
    assert set(claims) == TURN_CLAIMS
    assert claims["iss"] == "agent-runtime"
    assert claims["aud"] == "context-engine"
    assert claims["sub"] == f"agent:{session['agent_id']}"
    assert claims["act"] == {"sub": "alice"}
    assert (claims["tenant_id"], claims["agent_id"]) == (tenant, session["agent_id"])
    assert (claims["session_id"], claims["turn_id"]) == (session["id"], run.turn_id)
    assert 0 < claims["exp"] - claims["iat"] <= 300
    assert len(claims["jti"]) >= 16


async def test_each_turn_gets_a_token_of_its_own(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    client = integrated.client
    session = await new_session(client, alice, {"text": "hi"})

    first = await run_turn(client, alice, session, "one")
    second = await run_turn(client, alice, session, "two")

    claims = [
        await verify_token(client, bearer(c.request.headers.get("authorization")), "context-engine")
        for c in ce.routes["assemble"].calls
    ]
    assert [c["turn_id"] for c in claims] == [first.turn_id, second.turn_id]
    assert claims[0]["jti"] != claims[1]["jti"]


async def test_the_assembled_context_is_what_the_model_sees(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    client = integrated.client
    session = await new_session(client, alice, *ECHO_THEN_ANSWER)

    run = await run_turn(client, alice, session, "what is new?")

    first, second = integrated.model.requests
    engine_history = [ChatMessage(role=h["role"], content=h["content"]) for h in ENGINE_CONTEXT["history"]]
    user = ChatMessage(role="user", content="what is new?")
    assert first.system == second.system == ENGINE_SYSTEM
    assert first.messages == [*engine_history, user]
    assert [m.role for m in second.messages] == ["user", "assistant", "user", "assistant", "tool"]
    assert second.messages[:3] == [*engine_history, user]
    assert second.messages[4].content == "ping"
    words = sum(len(m.content.split()) for m in first.messages) + len(ENGINE_SYSTEM.split())
    assert run.of("usage")[0]["input_tokens"] == words


@pytest.mark.parametrize(
    "failure",
    [
        httpx.Response(500, json={"code": "internal", "message": "engine broke"}),
        httpx.ReadTimeout("engine too slow"),
        httpx.ConnectError("connection refused"),
    ],
    ids=["http-500", "timeout", "refused"],
)
async def test_an_assemble_failure_degrades_to_the_builtin_context(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str], failure: httpx.Response | Exception
) -> None:
    ce.routes["assemble"].side_effect = failure
    client = integrated.client
    session = await new_session(client, alice, {"text": "fine anyway"})

    run = await run_turn(client, alice, session, "hello there")

    assert run.ended["status"] == "completed"
    assert run.ended["final_output"] == "fine anyway"
    [degraded] = run.of("context.degraded")
    assert degraded["component"] == "assemble"
    assert "AssembleContext" in degraded["error"]
    [request] = integrated.model.requests
    assert request.system == "You are a test agent."
    assert request.messages == [ChatMessage(role="user", content="hello there")]


async def test_an_engine_failure_mid_turn_keeps_every_message_once(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    ce.routes["assemble"].side_effect = [httpx.Response(200, json=ENGINE_CONTEXT), httpx.Response(503)]
    client = integrated.client
    session = await new_session(client, alice, *ECHO_THEN_ANSWER)

    run = await run_turn(client, alice, session, "go")

    assert run.ended["status"] == "completed"
    assert [d["component"] for d in run.of("context.degraded")] == ["assemble"]
    second = integrated.model.requests[1]
    assert second.system == "You are a test agent."
    assert [(m.role, m.content) for m in second.messages] == [("user", "go"), ("assistant", ""), ("tool", "ping")]


async def test_an_unreachable_validate_is_audited_and_the_turn_goes_on(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    ce.routes["validate"].side_effect = httpx.ConnectError("connection refused")
    client = integrated.client
    session = await new_session(client, alice, {"text": "still answered"}, context=GUARDRAILS)

    run = await run_turn(client, alice, session, "hi")

    assert run.ended["status"] == "completed"
    assert run.ended["final_output"] == "still answered"
    [(kind, detail)] = await audit_records(integrated.app, run.turn_id)
    assert kind == "integrity_check_skipped"
    assert detail["reason"] == "unreachable"
    assert [d["component"] for d in run.of("context.degraded")] == ["validate"]


async def test_a_guardrail_violation_fails_the_turn_before_the_model_runs(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    ce.routes["validate"].respond(
        json={"valid": False, "violations": [{"code": "tampered", "message": "system prompt hash mismatch"}]}
    )
    client = integrated.client
    session = await new_session(client, alice, {"text": "never said"}, context=GUARDRAILS)

    run = await run_turn(client, alice, session, "hi")

    assert run.ended["status"] == "failed"
    assert run.ended["error"]["code"] == "guardrail_violation"
    assert "tampered" in run.ended["error"]["message"]
    assert integrated.model.requests == []
    assert run.of("message.completed") == []
    turn = (await client.get(f"/turns/{run.turn_id}", headers=alice)).json()
    assert (turn["status"], turn["error"]["code"]) == ("failed", "guardrail_violation")
    assert await audit_records(integrated.app, run.turn_id) == []


async def test_an_ingest_failure_degrades_and_the_turn_completes(
    integrated: Integrated, ce: respx.Router, alice: dict[str, str]
) -> None:
    ce.routes["ingest"].respond(503, json={"code": "unavailable", "message": "draining"})
    client = integrated.client
    session = await new_session(client, alice, *ECHO_THEN_ANSWER)

    run = await run_turn(client, alice, session, "hi")

    assert run.ended["status"] == "completed"
    assert run.ended["final_output"] == "all done"
    assert ce.routes["ingest"].call_count == 3
    degraded = run.of("context.degraded")
    assert [d["component"] for d in degraded] == ["ingest"] * 3
    assert all("IngestEvent" in d["error"] for d in degraded)
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()
    assert [m["role"] for m in messages["items"]] == ["user", "assistant", "tool", "assistant"]


async def test_without_a_context_engine_url_there_is_no_engine_traffic(
    client: httpx.AsyncClient, alice: dict[str, str], minted_audiences: list[str]
) -> None:
    with respx.mock(assert_all_called=False) as network:
        anything = network.route(name="anything").respond(500)
        session = await new_session(client, alice, *ECHO_THEN_ANSWER)

        run = await run_turn(client, alice, session, "hi")

    assert run.ended["status"] == "completed"
    assert run.of("context.degraded") == []
    assert anything.call_count == 0
    assert minted_audiences == []
