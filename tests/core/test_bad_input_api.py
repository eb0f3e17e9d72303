"""Input the service cannot store answers 422 naming the field, through every route that stores it,
and nothing is written: NUL characters, lone surrogates, integers beyond 2**53 - 1, deep nesting,
out-of-range path/query/header integers, and booleans where a count is expected."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.core.bounds import INT32_MAX, MAX_JSON_DEPTH
from tests.approvals.helpers import approval_ids, gated_config, run_turn, turn_id
from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config

NUL, SURROGATE, HUGE = "bad\u0000name", "bad\ud800name", 2**70
JSON_HEADERS = {"content-type": "application/json"}


def deep(depth: int) -> Any:
    document: Any = 1
    for _ in range(depth):
        document = {"k": document}
    return document


POISONS = [
    pytest.param(NUL, "string_nul", id="nul"),
    pytest.param(SURROGATE, "string_surrogate", id="surrogate"),
]
"""Poisons that fit wherever a string goes."""
VALUE_POISONS = [
    *POISONS,
    pytest.param(HUGE, "int_out_of_range", id="2**70"),
    pytest.param(deep(300), "too_deeply_nested", id="300-deep"),
]
"""Poisons that fit wherever any JSON value goes."""


async def send(client: httpx.AsyncClient, method: str, url: str, body: Any, headers: dict[str, str]) -> httpx.Response:
    """`json.dumps` escapes NUL and surrogates (`\\u0000`, `\\ud800`), as a hostile client would send them."""
    return await client.request(method, url, content=json.dumps(body), headers={**headers, **JSON_HEADERS})


def assert_refused(response: httpx.Response, loc: list[str], kind: str, *, exact: bool = True) -> None:
    """One error, of `kind`, at `loc` in the body (or below it: a too-deep value is named where the
    nesting passes the limit)."""
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    errors = response.json()["errors"]
    assert len(errors) == 1, errors
    named = errors[0]["loc"] if exact else errors[0]["loc"][: len(loc) + 1]
    assert named == ["body", *loc], errors
    assert errors[0]["type"] == kind


def agent_body(**config: Any) -> dict[str, Any]:
    return {"name": "agent", "config": scripted_config(**config)}


def agent_fields(poison: Any) -> list[tuple[dict[str, Any], list[str]]]:
    """Free JSON values inside an agent's config: script tool arguments and policy `args`."""
    step = {"text": "hi", "tool_calls": [{"name": "echo", "arguments": {"text": poison}}]}
    policy = {"id": "p", "point": "tool", "tool": "echo", "verdict": "deny", "args": {"text": poison}}
    return [
        (
            agent_body(model={"provider": "scripted", "script": [step]}),
            ["config", "model", "script", "0", "tool_calls", "0", "arguments", "text"],
        ),
        (agent_body(policies=[policy]), ["config", "policies", "0", "args", "text"]),
    ]


@pytest.mark.parametrize(("poison", "kind"), VALUE_POISONS)
async def test_any_json_value_in_an_agent_config_is_checked(
    client: httpx.AsyncClient, alice: dict[str, str], poison: Any, kind: str
) -> None:
    for body, loc in agent_fields(poison):
        assert_refused(await send(client, "POST", "/agents", body, alice), loc, kind, exact=False)
    assert (await client.get("/agents", headers=alice)).json()["items"] == []


@pytest.mark.parametrize(("poison", "kind"), POISONS)
@pytest.mark.parametrize(
    ("field", "build"),
    [
        ("name", lambda p: {"name": p, "config": scripted_config()}),
        ("description", lambda p: {"name": "a", "description": p, "config": scripted_config()}),
        ("script text", lambda p: agent_body(model={"provider": "scripted", "script": [{"text": p}]})),
        ("system prompt", lambda p: agent_body(system_prompt=p)),
        (
            "policy reason",
            lambda p: agent_body(policies=[{"id": "r", "point": "tool", "tool": "x", "verdict": "deny", "reason": p}]),
        ),
        (
            "policy regex",
            lambda p: agent_body(policies=[{"id": "r", "point": "pre_llm", "verdict": "deny", "input_regex": p}]),
        ),
    ],
)
async def test_strings_of_an_agent_are_checked(
    client: httpx.AsyncClient,
    alice: dict[str, str],
    poison: str,
    kind: str,
    field: str,
    build: Callable[[str], dict[str, Any]],
) -> None:
    response = await send(client, "POST", "/agents", build(poison), alice)
    assert response.status_code == 422, response.text
    assert [e["type"] for e in response.json()["errors"]] == [kind]
    assert (await client.get("/agents", headers=alice)).json()["items"] == []


@pytest.mark.parametrize(("poison", "kind"), VALUE_POISONS)
async def test_session_metadata_values_and_keys_are_checked(
    client: httpx.AsyncClient, alice: dict[str, str], poison: Any, kind: str
) -> None:
    agent = await create_agent(client, alice)
    value = await send(client, "POST", "/sessions", {"agent_id": agent["id"], "metadata": {"k": poison}}, alice)
    assert_refused(value, ["metadata", "k"], kind, exact=False)
    if isinstance(poison, str):
        key = await send(client, "POST", "/sessions", {"agent_id": agent["id"], "metadata": {poison: 1}}, alice)
        assert_refused(key, ["metadata"], kind)
    assert (await client.get("/sessions", headers=alice)).json()["items"] == []


@pytest.mark.parametrize(("poison", "kind"), POISONS)
async def test_turn_input_is_checked_and_no_turn_starts(
    client: httpx.AsyncClient, alice: dict[str, str], poison: str, kind: str
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    response = await send(client, "POST", f"/sessions/{session['id']}/turns", {"input": poison}, alice)
    assert_refused(response, ["input"], kind)
    assert (await client.get(f"/sessions/{session['id']}/turns", headers=alice)).json()["items"] == []


@pytest.mark.parametrize(("poison", "kind"), POISONS)
@pytest.mark.parametrize("field", ["reason", "input_regex"])
async def test_tenant_policy_strings_are_checked(
    client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, poison: str, kind: str, field: str
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    rule = {"id": "r", "point": "pre_llm", "verdict": "deny", "input_regex": "x", field: poison}
    response = await send(client, "PUT", "/policies", {"policies": [rule]}, admin)
    assert_refused(response, ["policies", "0", field], kind)
    assert (await client.get("/policies", headers=admin)).json()["policies"] == []


@pytest.mark.parametrize(("poison", "kind"), VALUE_POISONS)
async def test_decisions_with_bad_edited_arguments_or_reasons_leave_the_approval_pending(
    client: httpx.AsyncClient, alice: dict[str, str], poison: Any, kind: str
) -> None:
    _, frames = await run_turn(client, alice, gated_config())
    approval = approval_ids(frames)[0]
    attempts: list[tuple[str, str, Any, list[str]]] = [
        (
            "POST",
            f"/approvals/{approval}",
            {"decision": "approve", "arguments": {"expression": poison}},
            ["arguments", "expression"],
        ),
        (
            "POST",
            f"/turns/{turn_id(frames)}/approvals",
            {"decisions": [{"approval_id": approval, "decision": "approve", "arguments": {"x": poison}}]},
            ["decisions", "0", "arguments", "x"],
        ),
    ]
    if isinstance(poison, str):
        attempts.append(("POST", f"/approvals/{approval}", {"decision": "deny", "reason": poison}, ["reason"]))
    for method, url, body, loc in attempts:
        assert_refused(await send(client, method, url, body, alice), loc, kind, exact=False)
    assert (await client.get(f"/approvals/{approval}", headers=alice)).json()["status"] == "pending"


@pytest.mark.parametrize(
    ("path", "headers", "loc"),
    [
        ("/events?after=2147483648", {}, ["query", "after"]),
        ("/events", {"Last-Event-ID": "2147483648"}, ["header", "last-event-id"]),
        ("/events", {"Last-Event-ID": "²".encode()}, ["header", "last-event-id"]),
        ("/events?after=-1", {}, ["query", "after"]),
    ],
)
async def test_event_cursors_beyond_the_column_are_refused_before_the_stream(
    client: httpx.AsyncClient, alice: dict[str, str], path: str, headers: dict[str, str | bytes], loc: list[str]
) -> None:
    _, frames = await run_turn(client, alice, scripted_config())
    response = await client.get(f"/turns/{turn_id(frames)}{path}", headers={**alice, **headers})
    assert response.status_code == 422, response.text
    assert [e["loc"] for e in response.json()["errors"]] == [loc]


async def test_the_largest_event_cursor_the_column_holds_replays_nothing(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, scripted_config())
    response = await client.get(f"/turns/{turn_id(frames)}/events?after={INT32_MAX}", headers=alice)
    assert response.status_code == 200
    assert "event:" not in response.text


async def test_agent_versions_beyond_the_column_are_refused(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    path = await client.get(f"/agents/{agent['id']}/versions/{INT32_MAX + 1}", headers=alice)
    assert path.status_code == 422, path.text
    assert [e["loc"] for e in path.json()["errors"]] == [["path", "version"]]
    largest = await client.get(f"/agents/{agent['id']}/versions/{INT32_MAX}", headers=alice)
    assert largest.status_code == 404

    for version, kind in [(INT32_MAX + 1, "less_than_equal"), (True, "int_type"), ("1", "int_type")]:
        body = await send(client, "POST", "/sessions", {"agent_id": agent["id"], "agent_version": version}, alice)
        assert_refused(body, ["agent_version"], kind)


@pytest.mark.parametrize("cursor", ["9999999999999999999", "²", "١٢", "-1", "1 "])
async def test_message_cursors_that_are_not_a_stored_id_are_400(
    client: httpx.AsyncClient, alice: dict[str, str], cursor: str
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    response = await client.get(f"/sessions/{session['id']}/messages", params={"cursor": cursor}, headers=alice)
    assert response.status_code == 400, response.text
    assert [e["loc"] for e in response.json()["errors"]] == [["query", "cursor"]]


@pytest.mark.parametrize(
    ("request_", "loc"),
    [
        (lambda s: ("POST", "/agents", agent_body(limits={"max_loops": True})), ["config", "limits", "max_loops"]),
        (
            lambda s: ("POST", "/agents", agent_body(limits={"max_output_tokens": 5.0})),
            ["config", "limits", "max_output_tokens"],
        ),
        (
            lambda s: ("POST", f"/sessions/{s}/turns", {"input": "hi", "limits": {"max_loops": True}}),
            ["limits", "max_loops"],
        ),
    ],
)
async def test_counts_are_strict_integers(
    client: httpx.AsyncClient,
    alice: dict[str, str],
    request_: Callable[[str], tuple[str, str, Any]],
    loc: list[str],
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    method, url, body = request_(session["id"])
    assert_refused(await send(client, method, url, body, alice), loc, "int_type")


async def test_not_utf8_and_nan_bodies_are_422(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    for raw in (b'{"name": "\xff"}', b'{"name": "a", "config": NaN}'):
        response = await client.post("/agents", content=raw, headers={**alice, **JSON_HEADERS})
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["type"] == "json_invalid"


async def test_a_body_nested_deeper_than_the_parser_allows_is_422(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    raw = '{"name": "a", "config": ' + "[" * 5000 + "]" * 5000 + "}"
    response = await client.post("/agents", content=raw, headers={**alice, **JSON_HEADERS})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["type"] == "too_deeply_nested"
    assert MAX_JSON_DEPTH == 64


@pytest.mark.parametrize("enabled", [0, 1, "true"])
async def test_flags_are_strict_booleans(client: httpx.AsyncClient, alice: dict[str, str], enabled: object) -> None:
    agent = await create_agent(client, alice)
    body = {"agent_id": agent["id"], "cron": "0 9 * * 1-5", "input": "hi", "enabled": enabled}
    assert_refused(await send(client, "POST", "/schedules", body, alice), ["enabled"], "bool_type")
    assert (await client.get("/schedules", headers=alice)).json()["items"] == []


async def test_the_byok_switch_is_a_strict_boolean(
    client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    assert_refused(await send(client, "PATCH", "/credentials", {"byok_only": 0}, admin), ["byok_only"], "bool_type")
    assert (await client.get("/credentials", headers=admin)).json()["byok_only"] is False


@pytest.mark.parametrize("count", [True, 1.0, "1"])
@pytest.mark.parametrize(
    ("body", "loc"),
    [
        (lambda n: {"max_loops": n}, ["max_loops"]),
        (lambda n: {"max_concurrent_turns": n}, ["max_concurrent_turns"]),
        (lambda n: {"token_quota": {"period": "day", "tokens": n}}, ["token_quota", "tokens"]),
    ],
)
async def test_tenant_ceilings_are_strict_integers(
    client: httpx.AsyncClient,
    tenant: str,
    auth_headers: TokenFactory,
    body: Callable[[object], dict[str, Any]],
    loc: list[str],
    count: object,
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    assert_refused(await send(client, "PUT", "/limits", body(count), admin), loc, "int_type")
    assert (await client.get("/limits", headers=admin)).json()["max_loops"] is None


EMBEDDED_IPV4_HOSTS = ["[64:ff9b::7f00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:7f00:1::]", "[::127.0.0.1]",
                       "[::ffff:0:a00:1]", "[64:ff9b:1::c0a8:1]", "[fec0::1]"]  # fmt: skip


@pytest.mark.parametrize("host", EMBEDDED_IPV4_HOSTS)
@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/webhooks", lambda url: {"url": url, "events": ["turn.ended"]}, "url"),
        ("PUT", "/credentials/nat64", lambda url: {"provider": "openai", "api_key": "sk-x", "base_url": url},
         "base_url"),
    ],
)  # fmt: skip
async def test_outbound_urls_are_judged_by_the_ipv4_address_they_embed(
    client: httpx.AsyncClient,
    tenant: str,
    auth_headers: TokenFactory,
    host: str,
    method: str,
    path: str,
    body: Callable[[str], dict[str, Any]],
    field: str,
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    response = await send(client, method, path, body(f"http://{host}:8080/x"), admin)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"] == ["body", field]
    assert host.strip("[]") not in response.text
    listing = "/" + path.split("/")[1]
    assert (await client.get(listing, headers=admin)).json()["items"] == []


@pytest.mark.parametrize(
    "api_key",
    ["sk-proj-…", "sk-proj-\u00e9t\u00e9", "sk proj", "sk-proj-x\n", "\tsk", "k" * 4097, ""],
    ids=["ellipsis", "accents", "space", "newline", "tab", "too-long", "empty"],
)
async def test_a_provider_key_is_printable_ascii_and_bounded(
    client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, api_key: str
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    response = await send(client, "PUT", "/credentials/openai", {"provider": "openai", "api_key": api_key}, admin)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"] == ["body", "api_key"]
    if api_key:
        assert api_key.strip() not in response.text
    assert (await client.get("/credentials", headers=admin)).json()["items"] == []
