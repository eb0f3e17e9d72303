"""POST /turns/{id}/regenerate on PostgreSQL and SQLite: the latest ended turn runs again in place, its
messages kept as superseded (out of the history and the prompt), its events, receipts and usage kept,
and its tool calls never served to the new turn from the ledger."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
from sqlalchemy import select

from app.models import ToolExecution
from tests.autonomy.support import AUTONOMY, plan
from tests.branching.conftest import MCP_TOOLS, Branching, messages, new_session, prompt_of, said, settled, turn
from tests.conftest import TokenFactory
from tests.sse import read_turn
from tests.turns.support import slow_session

REPLIES = ({"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"}, {"text": "answer four"})


async def _regenerate(api: httpx.AsyncClient, headers: dict[str, str], turn_id: str, **body: Any) -> httpx.Response:
    return await api.post(f"/turns/{turn_id}/regenerate", json=body, headers={**headers, "Accept": "application/json"})


async def test_regenerating_the_latest_turn_supersedes_its_messages_and_keeps_its_audit_trail(
    branching: Branching, alice: dict[str, str]
) -> None:
    api = branching.client
    session = await new_session(api, alice, *REPLIES)
    first = (await turn(api, alice, session["id"], "one"))[-1].data["turn_id"]
    second = (await turn(api, alice, session["id"], "two"))[-1].data["turn_id"]
    before = await messages(api, alice, session["id"])
    old_events = (await api.get(f"/turns/{second}/events", headers=alice)).text
    old_receipts = (await api.get(f"/turns/{second}/decisions", headers=alice)).json()

    branching.model.requests.clear()
    frames = await read_turn(api, "POST", f"/turns/{second}/regenerate", json={}, headers=alice)
    assert frames[0].event == "turn.started"
    assert frames[-1].event == "turn.ended"
    again = frames[-1].data
    assert again["status"] == "completed"
    assert again["turn_id"] != second
    assert prompt_of(branching.model.requests[0]) == [*said(before[:2]), ("user", "two")]

    history = await messages(api, alice, session["id"])
    assert said(history) == [*said(before[:2]), ("user", "two"), ("assistant", "answer two")]
    assert [m["turn_id"] for m in history] == [first, first, again["turn_id"], again["turn_id"]]
    assert all(m["superseded_by_turn_id"] is None for m in history)
    everything = await messages(api, alice, session["id"], include="superseded")
    put_aside = [m for m in everything if m["turn_id"] == second]
    assert said(put_aside) == said(before[2:])
    assert {m["superseded_by_turn_id"] for m in put_aside} == {again["turn_id"]}

    new = (await api.get(f"/turns/{again['turn_id']}", headers=alice)).json()
    assert (new["supersedes_turn_id"], new["input"]) == (second, "two")
    old = (await api.get(f"/turns/{second}", headers=alice)).json()
    assert (old["status"], old["usage"]["output_tokens"] > 0) == ("completed", True)
    assert (await api.get(f"/turns/{second}/events", headers=alice)).text == old_events
    assert (await api.get(f"/turns/{second}/decisions", headers=alice)).json() == old_receipts


async def test_regenerate_twice_and_with_a_new_input_each_prompt_is_exactly_the_kept_messages(
    branching: Branching, alice: dict[str, str]
) -> None:
    api = branching.client
    session = await new_session(api, alice, *REPLIES)
    await turn(api, alice, session["id"], "one")
    latest = (await turn(api, alice, session["id"], "two"))[-1].data["turn_id"]
    kept = said((await messages(api, alice, session["id"]))[:2])

    for text in (None, "two, asked differently"):
        branching.model.requests.clear()
        body = {} if text is None else {"input": text}
        response = await _regenerate(api, alice, latest, **body)
        assert response.status_code == 200, response.text
        again = response.json()
        assert (again["status"], again["input"], again["supersedes_turn_id"]) == (
            "completed", text or "two", latest,
        )  # fmt: skip
        assert prompt_of(branching.model.requests[0]) == [*kept, ("user", text or "two")]
        latest = again["id"]

    async_ = await api.post(f"/turns/{latest}/regenerate", json={}, headers={**alice, "Prefer": "respond-async"})
    assert async_.status_code == 202, async_.text
    assert async_.headers["location"] == f"/turns/{async_.json()['id']}"
    assert (await settled(api, alice, async_.json()["id"]))["status"] == "completed"
    history = await messages(api, alice, session["id"])
    assert said(history)[:3] == [*kept, ("user", "two, asked differently")]
    assert len(history) == 4
    assert len(await messages(api, alice, session["id"], include="superseded")) == 10


async def test_regenerate_refuses_an_earlier_a_superseded_and_an_unfinished_turn(
    branching: Branching, tenant: str, auth_headers: TokenFactory, alice: dict[str, str]
) -> None:
    api = branching.client
    session = await new_session(api, alice, *REPLIES)
    first = (await turn(api, alice, session["id"], "one"))[-1].data["turn_id"]
    second = (await turn(api, alice, session["id"], "two"))[-1].data["turn_id"]

    earlier = await _regenerate(api, alice, first)
    assert (earlier.status_code, earlier.json()["code"], earlier.json()["latest_turn_id"]) == (
        409, "turn_not_latest", second,
    )  # fmt: skip
    assert (await _regenerate(api, auth_headers(f"{tenant}-x", "alice"), second)).status_code == 404
    assert (await _regenerate(api, auth_headers(tenant, "bob"), second)).status_code == 404
    assert (await _regenerate(api, alice, str(uuid.uuid4()))).status_code == 404

    third = (await _regenerate(api, alice, second)).json()["id"]
    superseded = await _regenerate(api, alice, second)
    assert (superseded.status_code, superseded.json()["code"]) == (409, "turn_superseded")
    assert superseded.json()["superseded_by_turn_id"] == third

    slow = await slow_session(api, alice)  # streams for about a minute: still running when asked
    started = await api.post(
        f"/sessions/{slow['id']}/turns", json={"input": "go"}, headers={**alice, "Prefer": "respond-async"}
    )
    running = started.json()["id"]
    try:
        busy = await _regenerate(api, alice, running)
        assert (busy.status_code, busy.json()["code"]) == (409, "turn_running")
    finally:
        await api.post(f"/turns/{running}/cancel", headers=alice)
    await settled(api, alice, running)
    assert len(await messages(api, alice, session["id"])) == 4, "a refused regenerate changes nothing"


async def test_a_regenerated_turns_tool_call_is_a_new_call_never_served_from_the_superseded_ledger(
    branching: Branching, alice: dict[str, str]
) -> None:
    api, gateway = branching.client, branching.gateway
    issue = {"tool_calls": [{"name": "github__create_issue", "arguments": {"title": "bug"}}]}
    session = await new_session(api, alice, issue, {"text": "filed it"}, **MCP_TOOLS)
    old = (await turn(api, alice, session["id"], "file a bug"))[-1].data["turn_id"]
    assert len(gateway.calls) == 1

    frames = await read_turn(api, "POST", f"/turns/{old}/regenerate", json={}, headers=alice)
    new = frames[-1].data["turn_id"]
    assert [f.data["result"] for f in frames if f.event == "tool_call.completed"] == ["created issue #2: bug"]
    assert len(gateway.calls) == 2
    assert gateway.calls[0][1] != gateway.calls[1][1]
    async with branching.app.state.container.engine.connect() as conn:
        rows = (await conn.execute(select(ToolExecution.turn_id, ToolExecution.result))).all()
    by_turn = {str(r.turn_id): r.result for r in rows if str(r.turn_id) in (old, new)}
    assert by_turn == {old: "created issue #1: bug", new: "created issue #2: bug"}


async def test_an_autonomous_turn_regenerates_autonomously(branching: Branching, alice: dict[str, str]) -> None:
    api = branching.client
    session = await new_session(api, alice, plan("only"), {"text": "step done"}, {"text": "summary"}, autonomy=AUTONOMY)
    url = f"/sessions/{session['id']}/turns"
    first = await read_turn(api, "POST", url, json={"input": "do it", "mode": "autonomous"}, headers=alice)
    old = first[-1].data["turn_id"]
    frames = await read_turn(api, "POST", f"/turns/{old}/regenerate", json={}, headers=alice)
    assert [f.event for f in frames if f.event.startswith("plan.")][0] == "plan.created"
    new = (await api.get(f"/turns/{frames[-1].data['turn_id']}", headers=alice)).json()
    assert (new["mode"], new["status"], new["supersedes_turn_id"]) == ("autonomous", "completed", old)
    assert [item["title"] for item in new["plan"]] == [json.loads(plan("only")["text"])["todos"][0]["title"]]
    assert [m["turn_id"] for m in await messages(api, alice, session["id"])] == [new["id"]] * len(
        await messages(api, alice, session["id"])
    )


async def test_two_regenerates_of_one_turn_at_once_start_one_turn(branching: Branching, alice: dict[str, str]) -> None:
    api = branching.client
    session = await new_session(api, alice, *REPLIES)
    old = (await turn(api, alice, session["id"], "one"))[-1].data["turn_id"]
    async_ = {**alice, "Prefer": "respond-async"}
    answers = await asyncio.gather(
        *(api.post(f"/turns/{old}/regenerate", json={"input": f"try {n}"}, headers=async_) for n in range(2))
    )
    started = [a for a in answers if a.status_code == 202]
    refused = [a for a in answers if a.status_code == 409]
    assert (len(started), len(refused)) == (1, 1), [a.text for a in answers]
    assert refused[0].json()["code"] in ("turn_superseded", "turn_running")
    await settled(api, alice, started[0].json()["id"])
    turns = (await api.get(f"/sessions/{session['id']}/turns", headers=alice)).json()["items"]
    assert [t["supersedes_turn_id"] for t in turns] == [old, None]
