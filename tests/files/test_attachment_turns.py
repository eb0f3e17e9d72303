"""Turns whose input names uploaded files, on PostgreSQL and SQLite: checked before the turn starts,
stored as references, and protected while a turn of their session is active."""

from __future__ import annotations

import uuid

import httpx

from tests.approvals.helpers import GATE_CALCULATOR, ended
from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config
from tests.files.test_files_api import PNG, upload
from tests.sse import read_turn


async def scripted_session(client: httpx.AsyncClient, headers: dict[str, str], **config: object) -> dict:
    agent = await create_agent(client, headers, scripted_config({"text": "A red square."}, **config))
    return await create_session(client, headers, agent["id"])


async def test_an_image_turn_completes_and_its_message_keeps_a_reference_to_the_file(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    image = (await upload(any_backend, alice, "shot.png", PNG, "image/png")).json()
    notes = (await upload(any_backend, alice, "notes.md", b"# hi\n")).json()
    session = await scripted_session(any_backend, alice)
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "file_id": image["id"]},
        {"type": "file", "file_id": notes["id"]},
    ]

    frames = await read_turn(any_backend, "POST", f"/sessions/{session['id']}/turns", json={"input": parts},
                             headers=alice)  # fmt: skip

    assert ended(frames)["status"] == "completed"
    turn = (await any_backend.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert turn["input"] == "What is this?"
    messages = (await any_backend.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert messages[0]["content"] == "What is this?"
    assert messages[0]["attachments"] == [
        {"file_id": image["id"], "kind": "image", "name": "shot.png", "content_type": "image/png", "size": len(PNG)},
        {"file_id": notes["id"], "kind": "text", "name": "notes.md", "content_type": "text/markdown", "size": 5},
    ]


async def test_bad_parts_are_refused_before_the_turn_starts(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    alice, bob = auth_headers(tenant, "alice"), auth_headers(tenant, "bob")
    session = await scripted_session(any_backend, alice)
    url = f"/sessions/{session['id']}/turns"
    notes = (await upload(any_backend, alice, "n.txt", b"hello")).json()
    bobs = (await upload(any_backend, bob, "b.png", PNG)).json()

    unknown = await any_backend.post(
        url, headers=alice, json={"input": [{"type": "image", "file_id": str(uuid.uuid4())}]}
    )
    foreign = await any_backend.post(url, headers=alice, json={"input": [{"type": "image", "file_id": bobs["id"]}]})
    odd_part = await any_backend.post(url, headers=alice, json={"input": [{"type": "audio", "file_id": notes["id"]}]})
    wrong_kind = await any_backend.post(url, headers=alice, json={"input": [{"type": "image", "file_id": notes["id"]}]})

    assert unknown.status_code == 404
    assert foreign.status_code == 404
    assert odd_part.status_code == 422
    assert wrong_kind.status_code == 422
    assert wrong_kind.json()["code"] == "attachment_unsupported"
    turns = (await any_backend.get(f"/sessions/{session['id']}/turns", headers=alice)).json()["items"]
    assert turns == []


async def test_the_claude_sdk_runtime_refuses_attachments_before_the_turn_starts(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    config = {"model": {"provider": "anthropic", "name": "claude-sonnet-4-5"}, "runtime": "claude_sdk"}
    session = await create_session(any_backend, admin, (await create_agent(any_backend, admin, config))["id"])
    image = (await upload(any_backend, admin, "shot.png", PNG)).json()

    refused = await any_backend.post(f"/sessions/{session['id']}/turns", headers=admin,
                                     json={"input": [{"type": "image", "file_id": image["id"]}]})  # fmt: skip

    assert refused.status_code == 422
    assert refused.json()["code"] == "attachment_unsupported"


async def test_a_file_cannot_be_deleted_while_a_turn_that_uses_it_waits(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    image = (await upload(any_backend, alice, "shot.png", PNG)).json()
    gated = scripted_config({"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
                            policies=[GATE_CALCULATOR])  # fmt: skip
    session = await create_session(any_backend, alice, (await create_agent(any_backend, alice, gated))["id"])
    parts = [{"type": "text", "text": "count"}, {"type": "image", "file_id": image["id"]}]

    frames = await read_turn(any_backend, "POST", f"/sessions/{session['id']}/turns", json={"input": parts},
                             headers=alice)  # fmt: skip
    assert ended(frames)["status"] == "interrupted"

    assert (await any_backend.delete(f"/files/{image['id']}", headers=alice)).status_code == 409
    await any_backend.post(f"/turns/{frames[0].data['turn_id']}/cancel", headers=alice)
    assert (await any_backend.delete(f"/files/{image['id']}", headers=alice)).status_code == 204


async def test_a_queued_turn_keeps_its_attachments_until_it_starts(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    image = (await upload(any_backend, alice, "shot.png", PNG)).json()
    gated = scripted_config({"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
                            {"text": "seen"}, policies=[GATE_CALCULATOR])  # fmt: skip
    session = await create_session(any_backend, alice, (await create_agent(any_backend, alice, gated))["id"])
    url = f"/sessions/{session['id']}/turns"
    first = await read_turn(any_backend, "POST", url, json={"input": "count"}, headers=alice)
    assert ended(first)["status"] == "interrupted"
    parts = [{"type": "text", "text": "look"}, {"type": "image", "file_id": image["id"]}]
    queued = await any_backend.post(url, headers={**alice, "Prefer": "respond-async"},
                                    json={"input": parts, "multitask_strategy": "enqueue"})  # fmt: skip
    assert queued.status_code == 202, queued.text

    await any_backend.post(f"/turns/{first[0].data['turn_id']}/cancel", headers=alice)
    await read_turn(any_backend, "GET", f"/turns/{queued.json()['id']}/events", headers=alice)

    messages = (await any_backend.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    look = [m for m in messages if m["content"] == "look"]
    assert [a["file_id"] for a in look[0]["attachments"]] == [image["id"]]
