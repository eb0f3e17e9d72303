"""Datasets: create, append (JSON and JSONL), page, build from recorded sessions, isolation."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import orjson
import pytest

from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config

NDJSON = {"Content-Type": "application/x-ndjson"}


async def _dataset(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await client.post("/datasets", json={"name": "smoke", **body}, headers=headers)
    assert response.status_code == 201, response.text
    assert response.headers["Location"] == f"/datasets/{response.json()['id']}"
    return dict(response.json())


async def test_items_are_appended_in_order_and_paged(any_backend: httpx.AsyncClient, alice: dict[str, str]) -> None:
    client = any_backend
    dataset = await _dataset(
        client, alice,
        items=[{"input": "2+2?", "expected": [{"type": "contains", "value": "4"}]}],
    )  # fmt: skip
    assert dataset["item_count"] == 1
    lines = b"\n".join(
        orjson.dumps({"input": f"q{i}", "expected": {"reference": f"a{i}"}, "metadata": {"i": i}}) for i in range(5)
    )
    added = await client.post(f"/datasets/{dataset['id']}/items", content=lines + b"\n\n", headers={**alice, **NDJSON})
    assert added.status_code == 201, added.text
    assert (added.json()["added"], added.json()["item_count"]) == (5, 6)
    more = await client.post(f"/datasets/{dataset['id']}/items", json={"items": [{"input": "last"}]}, headers=alice)
    assert more.status_code == 201, more.text
    first = (await client.get(f"/datasets/{dataset['id']}/items?limit=4", headers=alice)).json()
    rest = (await client.get(f"/datasets/{dataset['id']}/items?cursor={first['next_cursor']}", headers=alice)).json()
    assert [i["input"] for i in first["items"] + rest["items"]] == ["2+2?", "q0", "q1", "q2", "q3", "q4", "last"]
    assert rest["next_cursor"] is None
    assert first["items"][0]["expected"]["checks"] == [{"type": "contains", "value": "4", "case_sensitive": False}]
    assert first["items"][1]["expected"] == {"checks": [], "reference": "a0"}
    assert (await client.get(f"/datasets/{dataset['id']}", headers=alice)).json()["item_count"] == 7


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        (b'{"input": "x"}\nnot json\n', "line 2"),
        (b'{"input": "x", "expected": [{"type": "regex", "pattern": "(a"}]}\n', "line 1"),
        (b'{"input": "x", "expected": [{"type": "nope"}]}\n', "line 1"),
        (b'{"input": "a\\u0000b"}\n', "line 1"),
        (b"\n\n", "body"),
    ],
)
async def test_a_bad_jsonl_line_is_422_naming_the_line_and_adds_nothing(
    client: httpx.AsyncClient, alice: dict[str, str], body: bytes, loc: str
) -> None:
    dataset = await _dataset(client, alice)
    response = await client.post(f"/datasets/{dataset['id']}/items", content=body, headers={**alice, **NDJSON})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert loc in response.json()["errors"][0]["loc"]
    assert (await client.get(f"/datasets/{dataset['id']}", headers=alice)).json()["item_count"] == 0


@pytest.mark.parametrize(
    "check",
    [
        {"type": "regex", "pattern": "a{2000}"},
        {"type": "json_schema", "schema": {"type": "nonsense"}},
        {"type": "max_tokens", "value": True},
        {"type": "judge", "rubric": "good?"},
        {"type": "equals", "value": "x", "extra": 1},
    ],
)
async def test_bad_checks_are_422(client: httpx.AsyncClient, alice: dict[str, str], check: dict[str, Any]) -> None:
    response = await client.post("/datasets", json={"name": "bad", "items": [{"input": "x", "expected": [check]}]},
                                 headers=alice)  # fmt: skip
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["loc"][:3] == ["body", "items", "0"]


async def test_other_media_types_are_415_and_names_are_unique(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    dataset = await _dataset(client, alice)
    response = await client.post(
        f"/datasets/{dataset['id']}/items", content=b"input=x", headers={**alice, "Content-Type": "text/plain"}
    )
    assert response.status_code == 415, response.text
    again = await client.post("/datasets", json={"name": "smoke"}, headers=alice)
    assert again.status_code == 409


async def test_datasets_are_the_tenants_and_their_owners_change_them(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    dataset = await _dataset(client, alice, items=[{"input": "secret question"}])
    stranger = auth_headers("another-tenant", "alice", roles=["admin"])
    for method, path in (("GET", ""), ("GET", "/items"), ("DELETE", "")):
        response = await client.request(method, f"/datasets/{dataset['id']}{path}", headers=stranger)
        assert response.status_code == 404, (method, path)
    appended = await client.post(f"/datasets/{dataset['id']}/items", json={"items": [{"input": "x"}]}, headers=stranger)
    assert appended.status_code == 404
    bob = auth_headers(tenant, "bob")
    assert (await client.get(f"/datasets/{dataset['id']}/items", headers=bob)).status_code == 200
    assert (await client.delete(f"/datasets/{dataset['id']}", headers=bob)).status_code == 403
    assert (await client.delete(f"/datasets/{dataset['id']}", headers=alice)).status_code == 204
    assert (await client.get(f"/datasets/{dataset['id']}", headers=alice)).status_code == 404


async def test_items_from_sessions_carry_input_reference_and_recorded_tools(
    any_backend: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory, tenant: str
) -> None:
    client = any_backend
    config = scripted_config(
        {"tool_calls": [{"name": "echo", "arguments": {"text": "recorded"}}]},
        {"text": "the echo said recorded"},
        {"text": "plain answer"},
    )
    agent = await create_agent(client, alice, config)
    session = await create_session(client, alice, agent["id"])
    for text in ("use the tool", "just answer"):
        turn = await client.post(
            f"/sessions/{session['id']}/turns", json={"input": text}, headers={**alice, "Accept": "application/json"}
        )
        assert turn.status_code == 200, turn.text
        assert turn.json()["status"] == "completed"
    dataset = await _dataset(client, alice)
    made = await client.post(
        f"/datasets/{dataset['id']}/items:from-sessions", json={"session_ids": [session["id"]]}, headers=alice
    )
    assert made.status_code == 201, made.text
    items = made.json()["items"]
    assert [i["input"] for i in items] == ["use the tool", "just answer"]
    assert [i["expected"]["reference"] for i in items] == ["the echo said recorded", "plain answer"]
    assert items[0]["recorded_tools"] == [
        {"name": "echo", "arguments": {"text": "recorded"}, "result": "recorded", "is_error": False}
    ]
    assert items[1]["recorded_tools"] == []
    bob = auth_headers(tenant, "bob")
    own = await _dataset(client, bob, name="bobs")
    foreign = await client.post(
        f"/datasets/{own['id']}/items:from-sessions", json={"session_ids": [session["id"]]}, headers=bob
    )
    unknown = await client.post(
        f"/datasets/{own['id']}/items:from-sessions", json={"session_ids": [str(uuid.uuid4())]}, headers=bob
    )
    assert (foreign.status_code, unknown.status_code) == (422, 422)
    assert [e["loc"] for e in foreign.json()["errors"]] == [["body", "session_ids"]]
    assert foreign.json()["detail"] == f"Session {session['id']} not found"
    assert (await client.get(f"/datasets/{own['id']}", headers=bob)).json()["item_count"] == 0


async def test_a_dataset_holds_at_most_ten_thousand_items_a_thousand_a_request(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    dataset = await _dataset(client, alice)
    too_many = await client.post(
        f"/datasets/{dataset['id']}/items", json={"items": [{"input": "x"}] * 1001}, headers=alice
    )
    assert too_many.status_code == 422, too_many.text
    for _ in range(10):
        added = await client.post(f"/datasets/{dataset['id']}/items", json={"items": [{"input": "x"}] * 1000},
                                  headers=alice)  # fmt: skip
        assert added.status_code == 201, added.text
    over = await client.post(f"/datasets/{dataset['id']}/items", json={"items": [{"input": "x"}]}, headers=alice)
    assert over.status_code == 422
    assert "at most 10000 items" in over.json()["detail"]
    assert (await client.get(f"/datasets/{dataset['id']}", headers=alice)).json()["item_count"] == 10_000
