"""The Context Engine client, asserted on the requests it sends (respx)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx

from app.context.engine_client import (
    AssembledContext,
    ContextEngineClient,
    ContextEngineError,
    ContextEngineUnavailable,
    PromptValidation,
)

BASE = "http://engine.test"
SERVICE = f"{BASE}/contextengine.v1.ContextEngine"
TOKEN = "ctx-token-123.456.789"


@pytest.fixture
async def engine() -> AsyncIterator[ContextEngineClient]:
    async with httpx.AsyncClient() as http:
        yield ContextEngineClient(http, base_url=f"{BASE}/", timeout=2.0)


def _sent(route: respx.Route) -> tuple[httpx.Request, Any]:
    request = route.calls.last.request
    return request, json.loads(request.content)


def _assert_connect_headers(request: httpx.Request) -> None:
    assert request.method == "POST"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["content-type"] == "application/json"


@respx.mock
async def test_assemble_context_posts_the_query_and_parses_every_layer(engine: ContextEngineClient) -> None:
    route = respx.post(f"{SERVICE}/AssembleContext").respond(
        json={
            "system_prompt": "Be brief.",
            "layers": [{"level": "team", "content": "eng rules"}],
            "documents": [{"id": "doc-1", "content": "runbook"}],
            "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        }
    )

    context = await engine.assemble_context(TOKEN, session_id="s-1", agent_id="a-1", query="what now?")

    request, body = _sent(route)
    _assert_connect_headers(request)
    assert body == {"session_id": "s-1", "agent_id": "a-1", "query": "what now?"}
    assert context == AssembledContext(
        system_prompt="Be brief.",
        layers=[{"level": "team", "content": "eng rules"}],
        documents=[{"id": "doc-1", "content": "runbook"}],
        history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    )


@respx.mock
async def test_assemble_context_reads_proto3_json_spelling(engine: ContextEngineClient) -> None:
    respx.post(f"{SERVICE}/AssembleContext").respond(json={"systemPrompt": "camel"})

    context = await engine.assemble_context(TOKEN, session_id="s", agent_id="a", query="q")

    assert context == AssembledContext(system_prompt="camel")


@respx.mock
async def test_validate_prompt_sends_the_guardrail_hashes(engine: ContextEngineClient) -> None:
    route = respx.post(f"{SERVICE}/ValidatePrompt").respond(
        json={"valid": False, "violations": [{"code": "tampered", "message": "hash mismatch"}]}
    )

    validation = await engine.validate_prompt(TOKEN, session_id="s-1", guardrail_hashes=["h1", "h2"], prompt="p")

    request, body = _sent(route)
    _assert_connect_headers(request)
    assert body == {"session_id": "s-1", "guardrail_hashes": ["h1", "h2"], "prompt": "p"}
    assert validation == PromptValidation(valid=False, violations=[{"code": "tampered", "message": "hash mismatch"}])


@respx.mock
async def test_validate_prompt_valid(engine: ContextEngineClient) -> None:
    respx.post(f"{SERVICE}/ValidatePrompt").respond(json={"valid": True, "violations": []})

    validation = await engine.validate_prompt(TOKEN, session_id="s", guardrail_hashes=[], prompt="p")

    assert validation == PromptValidation(valid=True, violations=[])


@respx.mock
async def test_ingest_event_posts_the_event(engine: ContextEngineClient) -> None:
    route = respx.post(f"{SERVICE}/IngestEvent").respond(json={})
    event = {"kind": "tool_result", "tool_call_id": "c-1", "content": "4"}

    await engine.ingest_event(TOKEN, session_id="s-1", turn_id="t-1", loop=2, event=event)

    request, body = _sent(route)
    _assert_connect_headers(request)
    assert body == {"session_id": "s-1", "turn_id": "t-1", "loop": 2, "event": event}


@respx.mock
async def test_connect_error_body_gives_status_and_code(engine: ContextEngineClient) -> None:
    respx.post(f"{SERVICE}/AssembleContext").respond(
        403, json={"code": "permission_denied", "message": f"token {TOKEN} lacks scope"}
    )

    with pytest.raises(ContextEngineError) as caught:
        await engine.assemble_context(TOKEN, session_id="s", agent_id="a", query="q")

    error = caught.value
    assert not isinstance(error, ContextEngineUnavailable)
    assert (error.status, error.code) == (403, "permission_denied")
    assert "permission_denied" in str(error)
    assert TOKEN not in str(error)


@respx.mock
async def test_error_status_without_a_connect_body(engine: ContextEngineClient) -> None:
    respx.post(f"{SERVICE}/ValidatePrompt").respond(500, text="<html>oops</html>")

    with pytest.raises(ContextEngineError) as caught:
        await engine.validate_prompt(TOKEN, session_id="s", guardrail_hashes=[], prompt="p")

    assert (caught.value.status, caught.value.code) == (500, None)


@respx.mock
async def test_gateway_statuses_mean_unavailable(engine: ContextEngineClient) -> None:
    respx.post(f"{SERVICE}/IngestEvent").respond(503, json={"code": "unavailable", "message": "draining"})

    with pytest.raises(ContextEngineUnavailable) as caught:
        await engine.ingest_event(TOKEN, session_id="s", turn_id="t", loop=0, event={"kind": "assistant_message"})

    assert (caught.value.status, caught.value.code) == (503, "unavailable")


@pytest.mark.parametrize(
    "failure",
    [httpx.ConnectError(f"refused for {TOKEN}"), httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("eof")],
)
@respx.mock
async def test_network_failures_mean_unavailable(engine: ContextEngineClient, failure: Exception) -> None:
    respx.post(f"{SERVICE}/AssembleContext").mock(side_effect=failure)

    with pytest.raises(ContextEngineUnavailable) as caught:
        await engine.assemble_context(TOKEN, session_id="s", agent_id="a", query="q")

    assert TOKEN not in str(caught.value)
    assert caught.value.status is None


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="not json"),
        httpx.Response(200, json=["a", "list"]),
        httpx.Response(200, json={"system_prompt": 5}),
        httpx.Response(200, json={"system_prompt": "", "layers": "flat"}),
        httpx.Response(200, json={"system_prompt": "", "history": [{"role": "user", "content": None}, 3]}),
    ],
)
@respx.mock
async def test_malformed_responses_are_errors(engine: ContextEngineClient, response: httpx.Response) -> None:
    respx.post(f"{SERVICE}/AssembleContext").mock(return_value=response)

    with pytest.raises(ContextEngineError) as caught:
        await engine.assemble_context(TOKEN, session_id="s", agent_id="a", query="q")

    assert not isinstance(caught.value, ContextEngineUnavailable)
    assert TOKEN not in str(caught.value)


@respx.mock
async def test_malformed_validation_is_an_error(engine: ContextEngineClient) -> None:
    respx.post(f"{SERVICE}/ValidatePrompt").respond(json={"valid": "yes"})

    with pytest.raises(ContextEngineError, match="malformed"):
        await engine.validate_prompt(TOKEN, session_id="s", guardrail_hashes=[], prompt="p")
