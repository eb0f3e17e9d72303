"""Hard per-turn budgets at each point, the quota ledger a turn reserves from, a cancelled call's usage.

The scripted model counts a token a word: input is the words of the system prompt ("You are a test
agent.": 5) and of every message; output the words of its text plus one per tool call.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import func, select

from app.models import TurnEvent, Usage
from tests.approvals.helpers import decide, gated_config, run_turn
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.turns.support import POLL_TIMEOUT_SECONDS, slow_session
from tests.usage.conftest import Api
from tests.usage.support import ledger, put_limits

JSON = {"Accept": "application/json"}
ENDLESS = {"text": "still working", "tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]}


async def _session(api: Api, headers: dict[str, str], *steps: dict[str, Any], **config: Any) -> dict[str, Any]:
    agent = await create_agent(api.client, headers, scripted_config(*steps, **config))
    return await create_session(api.client, headers, agent["id"])


async def _turn(api: Api, headers: dict[str, str], session: dict[str, Any], **body: Any) -> dict[str, Any]:
    response = await api.client.post(
        f"/sessions/{session['id']}/turns", json={"input": "go", **body}, headers={**headers, **JSON}
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _events(api: Api, headers: dict[str, str], turn_id: str, kind: str) -> list[dict[str, Any]]:
    response = await api.client.get(f"/turns/{turn_id}/events", headers=headers)
    frames = [block for block in response.text.split("\n\n") if f"event: {kind}\n" in block]
    return [json.loads(f.split("data: ", 1)[1]) for f in frames]


async def test_a_budget_spent_before_the_first_call_ends_the_turn_without_calling_the_model(
    api: Api, alice: dict[str, str]
) -> None:
    session = await _session(api, alice, {"text": "never said"}, limits={"max_total_tokens": 3})
    turn = await _turn(api, alice, session)
    assert turn["status"] == "budget_exceeded"
    assert turn["error"]["code"] == "budget_exceeded"
    assert turn["error"]["spent"] == {"input_tokens": 0, "output_tokens": 0, "loops": 0}
    assert turn["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert await _events(api, alice, turn["id"], "message.completed") == []


async def test_a_total_budget_spent_across_tool_rounds_stops_before_the_next_call(
    api: Api, alice: dict[str, str]
) -> None:
    # call 1: 6 in + 3 out; call 2 would need a 9-token prompt: 9 + 9 > 12.
    session = await _session(api, alice, ENDLESS, limits={"max_total_tokens": 12, "max_loops": 10})
    turn = await _turn(api, alice, session)
    assert (turn["status"], turn["final_output"]) == ("budget_exceeded", "still working")
    assert turn["error"]["spent"] == {"input_tokens": 6, "output_tokens": 3, "loops": 1}
    assert len(await _events(api, alice, turn["id"], "message.completed")) == 1


async def test_a_call_capped_by_the_total_budget_ends_budget_exceeded_with_the_partial_text(
    api: Api, alice: dict[str, str]
) -> None:
    # call 2: a 9-token prompt leaves 20 - 9 - 9 = 2 tokens: the reply is cut after two words.
    long_reply = {"text": "one two three four five"}
    session = await _session(api, alice, ENDLESS, long_reply, limits={"max_total_tokens": 20, "max_loops": 10})
    turn = await _turn(api, alice, session)
    completed = await _events(api, alice, turn["id"], "message.completed")
    assert [(c["text"], c["stop_reason"]) for c in completed] == [
        ("still working", "tool_use"), ("one two ", "max_tokens"),
    ]  # fmt: skip
    assert (turn["status"], turn["final_output"]) == ("budget_exceeded", "one two ")
    assert turn["usage"]["input_tokens"] + turn["usage"]["output_tokens"] == 20
    assert turn["error"]["spent"] == {"input_tokens": 15, "output_tokens": 5, "loops": 1}


async def test_a_model_stopping_at_its_own_max_tokens_completes(api: Api, alice: dict[str, str]) -> None:
    config = scripted_config({"text": "one two three four"})
    config["model"]["max_tokens"] = 2
    agent = await create_agent(api.client, alice, config)
    turn = await _turn(api, alice, await create_session(api.client, alice, agent["id"]))
    assert (turn["status"], turn["final_output"]) == ("completed", "one two ")
    [completed] = await _events(api, alice, turn["id"], "message.completed")
    assert completed["stop_reason"] == "max_tokens"


async def test_every_call_reserves_from_the_quota_and_settles_to_its_real_usage(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 1000})
    turn = await _turn(api, alice, await _session(api, alice, {"text": "five words of reply here"}))
    assert turn["status"] == "completed"
    assert await ledger(api, tenant) == (turn["usage"]["input_tokens"] + turn["usage"]["output_tokens"], 0)


async def test_a_quota_spent_mid_turn_ends_it_budget_exceeded_with_quota_exceeded(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 10})
    turn = await _turn(api, alice, await _session(api, alice, ENDLESS, limits={"max_loops": 10}))
    assert turn["status"] == "budget_exceeded"
    assert turn["error"]["code"] == "quota_exceeded"
    assert turn["final_output"] == "still working"
    used, reserved = await ledger(api, tenant)
    assert (used, reserved) == (turn["usage"]["input_tokens"] + turn["usage"]["output_tokens"], 0)
    assert used >= 10
    refused = await api.client.post(
        f"/sessions/{(await _session(api, alice))['id']}/turns", json={"input": "again"}, headers=alice
    )
    assert refused.status_code == 429


async def test_concurrent_turns_on_two_replicas_overspend_the_quota_by_at_most_one_reservation(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str, database_url: str, tmp_path: Any
) -> None:
    if api.backend != "postgresql":
        return  # replicas share PostgreSQL; the SQLite file serves one process
    quota, max_tokens = 50, 10
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": quota})
    config = scripted_config({"text": "a b c d e"})
    config["model"]["max_tokens"] = max_tokens
    agent = await create_agent(api.client, alice, config)
    sessions = [await create_session(api.client, alice, agent["id"]) for _ in range(16)]
    async with running_app(make_settings(database_url, tmp_path)) as (_, other):
        clients = [api.client, other] * 8
        responses = await asyncio.gather(
            *(
                c.post(f"/sessions/{s['id']}/turns", json={"input": "go"}, headers={**alice, **JSON})
                for c, s in zip(clients, sessions, strict=True)
            )
        )
    outcomes = [r.json().get("status") if r.status_code == 200 else r.status_code for r in responses]
    assert "completed" in outcomes
    assert any(o in (429, "budget_exceeded") for o in outcomes)
    used, reserved = await ledger(api, tenant)
    reservation = 6 + max_tokens  # the prompt ("You are a test agent." + "go") and the call's max_tokens
    assert reserved == 0
    assert used <= quota - 1 + reservation
    completed = sum(1 for o in outcomes if o == "completed")
    assert used == completed * 11


async def test_a_cancelled_call_records_the_usage_it_streamed_and_settles_its_quota_reservation_to_it(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 100_000})
    session = await slow_session(api.client, alice)
    started = asyncio.create_task(
        api.client.post(f"/sessions/{session['id']}/turns", json={"input": "talk"}, headers={**alice, **JSON})
    )
    engine = api.app.state.container.engine
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            async with engine.connect() as conn:
                deltas = await conn.scalar(
                    select(func.count()).where(TurnEvent.type == "message.delta", TurnEvent.tenant_id == tenant)
                )
                turn_id = await conn.scalar(select(TurnEvent.turn_id).where(TurnEvent.tenant_id == tenant))
            if deltas and deltas >= 3:
                break
            await asyncio.sleep(0.05)
    cancelled = await api.client.post(f"/turns/{turn_id}/cancel", headers=alice)
    assert cancelled.json()["status"] == "cancelled"
    await started
    turn = (await api.client.get(f"/turns/{turn_id}", headers=alice)).json()
    streamed = await _events(api, alice, str(turn_id), "message.delta")
    assert len(streamed) >= 3
    assert turn["usage"] == {"input_tokens": 6, "output_tokens": len(streamed)}
    [usage] = await _events(api, alice, str(turn_id), "usage")
    assert (usage["input_tokens"], usage["output_tokens"], usage["kind"]) == (6, len(streamed), "model")
    async with engine.connect() as conn:
        rows = (
            await conn.execute(select(Usage.input_tokens, Usage.output_tokens).where(Usage.turn_id == turn_id))
        ).all()
    assert [tuple(r) for r in rows] == [(6, len(streamed))]
    assert await ledger(api, tenant) == (6 + len(streamed), 0)


async def test_an_approval_interrupt_and_its_resume_leave_no_quota_reserved(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 100_000})
    _, frames = await run_turn(api.client, alice, gated_config())
    ended = frames[-1].data
    assert ended["status"] == "interrupted"
    assert await ledger(api, tenant) == (ended["usage"]["input_tokens"] + ended["usage"]["output_tokens"], 0)

    [required] = [f for f in frames if f.event == "approval.required"]
    resumed = (await decide(api.client, alice, required.data["approval_id"]))[-1].data
    assert resumed["status"] == "completed"
    assert await ledger(api, tenant) == (resumed["usage"]["input_tokens"] + resumed["usage"]["output_tokens"], 0)
