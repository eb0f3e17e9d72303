"""Double-texting (`multitask_strategy`) and background turns (`Prefer: respond-async`), on PostgreSQL
and SQLite: what happens to a session's active turn when a second message arrives."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn

ASYNC = {"Prefer": "respond-async"}
SLOW_REPLY = " ".join(f"w{i}" for i in range(30))


@pytest.fixture
def api(any_backend: httpx.AsyncClient) -> httpx.AsyncClient:
    return any_backend


async def _session(api: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **extra: Any) -> str:
    config = scripted_config(*steps, **extra)
    config["model"]["chunk_delay_ms"] = 40
    agent = await create_agent(api, headers, config)
    return str((await create_session(api, headers, agent["id"]))["id"])


async def _background(api: httpx.AsyncClient, headers: dict[str, str], session_id: str, text: str, **body: Any) -> str:
    response = await api.post(
        f"/sessions/{session_id}/turns", json={"input": text, **body}, headers={**headers, **ASYNC}
    )
    assert response.status_code == 202, response.text
    assert response.headers["location"] == f"/turns/{response.json()['id']}"
    return str(response.json()["id"])


async def _settled(api: httpx.AsyncClient, headers: dict[str, str], turn_id: str) -> dict[str, Any]:
    for _ in range(400):
        turn = (await api.get(f"/turns/{turn_id}", headers=headers)).json()
        if turn["status"] not in ("queued", "running"):
            return dict(turn)
        await asyncio.sleep(0.05)
    raise AssertionError(f"turn {turn_id} did not settle")


async def _history(api: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> list[tuple[str, str]]:
    items = (await api.get(f"/sessions/{session_id}/messages", headers=headers)).json()["items"]
    return [(m["role"], m["content"]) for m in items]


async def test_respond_async_answers_202_and_the_turn_runs_on(api: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session_id = await _session(api, alice, {"text": "done in the background"})
    turn_id = await _background(api, alice, session_id, "go")
    turn = await _settled(api, alice, turn_id)
    assert (turn["status"], turn["final_output"]) == ("completed", "done in the background")
    replay = await read_turn(api, "GET", f"/turns/{turn_id}/events", headers=alice)
    assert replay[-1].event == "turn.ended"


async def test_reject_is_the_default_and_answers_409(api: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session_id = await _session(api, alice, {"text": SLOW_REPLY})
    first = await _background(api, alice, session_id, "one")
    second = await api.post(f"/sessions/{session_id}/turns", json={"input": "two"}, headers=alice)
    assert second.status_code == 409
    assert second.json()["active_turn_id"] == first


async def test_enqueue_runs_the_second_turn_after_the_first(api: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session_id = await _session(api, alice, {"text": SLOW_REPLY}, {"text": "second answer"})
    first = await _background(api, alice, session_id, "one")
    frames = await read_turn(
        api, "POST", f"/sessions/{session_id}/turns",
        json={"input": "two", "multitask_strategy": "enqueue"}, headers=alice,
    )  # fmt: skip
    assert frames[0].event == "turn.started"
    assert (frames[-1].data["status"], frames[-1].data["final_output"]) == ("completed", "second answer")
    assert (await _settled(api, alice, first))["status"] == "completed"
    assert await _history(api, alice, session_id) == [
        ("user", "one"), ("assistant", SLOW_REPLY), ("user", "two"), ("assistant", "second answer"),
    ]  # fmt: skip


async def test_a_queued_turn_shows_as_queued_and_can_be_cancelled(
    api: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session_id = await _session(api, alice, {"text": SLOW_REPLY}, {"text": "third answer"})
    first = await _background(api, alice, session_id, "one")
    second = await _background(api, alice, session_id, "two", multitask_strategy="enqueue")
    third = await _background(api, alice, session_id, "three", multitask_strategy="enqueue")
    assert (await api.get(f"/turns/{second}", headers=alice)).json()["status"] == "queued"
    cancelled = await api.post(f"/turns/{second}/cancel", headers=alice)
    assert cancelled.json()["status"] == "cancelled"
    assert (await _settled(api, alice, first))["status"] == "completed"
    assert (await _settled(api, alice, third))["status"] == "completed"
    assert (await _settled(api, alice, second))["status"] == "cancelled"
    assert [content for role, content in await _history(api, alice, session_id) if role == "user"] == ["one", "three"]


async def test_interrupt_cancels_the_active_turn_and_keeps_its_messages(
    api: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session_id = await _session(api, alice, {"text": SLOW_REPLY})
    first = await _background(api, alice, session_id, "one")
    await asyncio.sleep(0.3)
    frames = await read_turn(
        api, "POST", f"/sessions/{session_id}/turns",
        json={"input": "two", "multitask_strategy": "interrupt"}, headers=alice,
    )  # fmt: skip
    assert frames[-1].data["status"] == "completed"
    assert (await _settled(api, alice, first))["status"] == "cancelled"
    assert await _history(api, alice, session_id) == [("user", "one"), ("user", "two"), ("assistant", SLOW_REPLY)]


async def test_rollback_also_removes_the_active_turns_messages_but_keeps_its_events(
    api: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session_id = await _session(api, alice, {"text": SLOW_REPLY})
    first = await _background(api, alice, session_id, "one")
    await asyncio.sleep(0.3)
    frames = await read_turn(
        api, "POST", f"/sessions/{session_id}/turns",
        json={"input": "two", "multitask_strategy": "rollback"}, headers=alice,
    )  # fmt: skip
    assert frames[-1].data["status"] == "completed"
    assert (await _settled(api, alice, first))["status"] == "cancelled"
    assert await _history(api, alice, session_id) == [("user", "two"), ("assistant", SLOW_REPLY)]
    replay = await read_turn(api, "GET", f"/turns/{first}/events", headers=alice)
    assert replay[0].event == "turn.started"
    assert replay[-1].data["status"] == "cancelled"


GATED = [{"id": "calc", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}]
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}


async def test_a_turn_waiting_for_approval_holds_the_queue_until_it_is_decided(
    api: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session_id = await _session(api, alice, CALC, {"text": "42 it is"}, {"text": "next"}, policies=GATED)
    first = await read_turn(api, "POST", f"/sessions/{session_id}/turns", json={"input": "calc"}, headers=alice)
    assert first[-1].data["status"] == "interrupted"
    approval_id = next(f.data["approval_id"] for f in first if f.event == "approval.required")
    queued = await _background(api, alice, session_id, "later", multitask_strategy="enqueue")
    await asyncio.sleep(0.3)
    assert (await api.get(f"/turns/{queued}", headers=alice)).json()["status"] == "queued"
    decided = await api.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers={**alice, **ASYNC})
    assert decided.status_code == 202
    assert decided.json()["id"] == first[0].data["turn_id"]
    assert (await _settled(api, alice, first[0].data["turn_id"]))["status"] == "completed"
    assert (await _settled(api, alice, queued))["final_output"] == "next"


async def test_rollback_of_a_turn_waiting_for_approval_cancels_its_approvals(
    api: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session_id = await _session(api, alice, CALC, policies=GATED)
    first = await read_turn(api, "POST", f"/sessions/{session_id}/turns", json={"input": "calc"}, headers=alice)
    approval_id = next(f.data["approval_id"] for f in first if f.event == "approval.required")
    frames = await read_turn(
        api, "POST", f"/sessions/{session_id}/turns",
        json={"input": "instead", "multitask_strategy": "rollback"}, headers=alice,
    )  # fmt: skip
    assert frames[-1].data["status"] == "interrupted"
    assert frames[0].data["turn_id"] != first[0].data["turn_id"]
    assert (await api.get(f"/approvals/{approval_id}", headers=alice)).json()["status"] == "expired"
    assert (await api.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice)).status_code == 409
    assert [content for role, content in await _history(api, alice, session_id) if role == "user"] == ["instead"]


async def test_an_unknown_strategy_is_422(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session_id = await _session(client, alice, {"text": "x"})
    response = await client.post(
        f"/sessions/{session_id}/turns", json={"input": "x", "multitask_strategy": "shove"}, headers=alice
    )
    assert response.status_code == 422
    assert "multitask_strategy" in response.json()["errors"][0]["loc"]
