"""A session's title: its first user message's opening, set when the first turn starts (on both
backends' hot path), kept by later turns, renamed with `PATCH /sessions/{id}`."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.runtime.store.turns import TITLE_CHARS, title_of
from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn


async def _turn(client: httpx.AsyncClient, headers: dict[str, str], session_id: str, text: str) -> None:
    await read_turn(client, "POST", f"/sessions/{session_id}/turns", json={"input": text}, headers=headers)


async def test_the_first_message_titles_the_session_and_a_rename_sticks(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    client = any_backend
    agent = await create_agent(client, alice, scripted_config({"text": "ok"}))
    session = await create_session(client, alice, agent["id"])
    assert session["title"] is None
    await _turn(client, alice, session["id"], "\n  Plan a trip to Lisbon  \nwith two stops")
    await _turn(client, alice, session["id"], "And a second question")
    read = (await client.get(f"/sessions/{session['id']}", headers=alice)).json()
    assert read["title"] == "Plan a trip to Lisbon"

    renamed = await client.patch(f"/sessions/{session['id']}", json={"title": "  Lisbon, May "}, headers=alice)
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "Lisbon, May"
    await _turn(client, alice, session["id"], "A third one")
    listed = (await client.get(f"/sessions?agent_id={agent['id']}", headers=alice)).json()["items"]
    assert [s["title"] for s in listed] == ["Lisbon, May"]


def test_a_long_first_line_is_cut_at_a_word() -> None:
    title = title_of("word " * 40)
    assert title is not None
    assert title.endswith("…")
    assert len(title) <= TITLE_CHARS + 1
    assert not title.removesuffix("…").endswith(" ")
    assert title_of("x" * 500) == "x" * TITLE_CHARS + "…"
    assert title_of("   \n  ") is None


@pytest.mark.parametrize(
    "body", [{"title": ""}, {"title": "   "}, {"title": "a\nb"}, {"title": "x" * 201}, {"name": "x"}, {}]
)
async def test_a_bad_title_is_a_precise_422_and_changes_nothing(
    client: httpx.AsyncClient, alice: dict[str, str], body: dict[str, object]
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    response = await client.patch(f"/sessions/{session['id']}", json=body, headers=alice)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert (await client.get(f"/sessions/{session['id']}", headers=alice)).json()["title"] is None


async def test_only_the_owner_or_an_admin_renames_and_another_tenant_gets_404(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    session = await create_session(client, alice, agent["id"])
    url = f"/sessions/{session['id']}"
    for stranger in (auth_headers(tenant, "bob"), auth_headers(f"{tenant}-other", "alice")):
        response = await client.patch(url, json={"title": "mine now"}, headers=stranger)
        assert response.status_code == 404, response.text
    admin = auth_headers(tenant, "root", roles=["admin"])
    assert (await client.patch(url, json={"title": "by the admin"}, headers=admin)).json()["title"] == "by the admin"
    assert (await client.patch(f"/sessions/{uuid.uuid4()}", json={"title": "x"}, headers=alice)).status_code == 404
