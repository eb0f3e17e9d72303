"""New turns over the tenant's ceilings: 429 `too_many_turns` and `quota_exceeded`, with Retry-After."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import insert

from app.governance.period import period_bounds
from app.models import QuotaLedger
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.turns.support import LONG_TEXT, POLL_TIMEOUT_SECONDS, slow_session
from tests.usage.conftest import Api
from tests.usage.support import problem, put_limits

JSON = {"Accept": "application/json"}


def _turns(session: dict[str, Any]) -> str:
    return f"/sessions/{session['id']}/turns"


async def running_turn(client: httpx.AsyncClient, headers: dict[str, str], session: dict[str, Any]) -> str:
    """The id of the session's turn once it runs (bounded polling)."""
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while True:
            items = (await client.get(_turns(session), headers=headers)).json()["items"]
            if items and items[0]["status"] == "running":
                return str(items[0]["id"])
            await asyncio.sleep(0.02)


async def _plant_usage(api: Api, tenant: str, period: str, used: int) -> datetime:
    start, end = period_bounds(period, datetime.now(UTC))
    async with api.app.state.container.engine.begin() as conn:
        await conn.execute(
            insert(QuotaLedger).values(tenant_id=tenant, period_start=start, used=used, reserved=0, updated_at=start)
        )
    return end


async def test_a_turn_beyond_max_concurrent_turns_answers_429_and_starts_nothing(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_concurrent_turns=1)
    busy = await slow_session(api.client, alice)
    first = asyncio.create_task(api.client.post(_turns(busy), json={"input": "talk"}, headers={**alice, **JSON}))
    turn_id = await running_turn(api.client, alice, busy)
    other = await create_session(api.client, alice, (await create_agent(api.client, alice))["id"])

    refused = await api.client.post(_turns(other), json={"input": "hi"}, headers=alice)

    body = problem(refused, 429, "too_many_turns")
    assert "1 concurrent" in body["detail"]
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await api.client.get(_turns(other), headers=alice)).json()["items"] == []
    assert (await api.client.post(f"/turns/{turn_id}/cancel", headers=alice)).status_code == 200
    await first
    after = await api.client.post(_turns(other), json={"input": "hi"}, headers={**alice, **JSON})
    assert after.json()["status"] == "completed"


async def test_turns_of_other_tenants_do_not_count(
    api: Api, admin: dict[str, str], alice: dict[str, str], auth_headers: Any
) -> None:
    await put_limits(api.client, admin, max_concurrent_turns=1)
    stranger = auth_headers(f"other-{admin['Authorization'][-12:]}", "eve")
    busy = await slow_session(api.client, stranger)
    first = asyncio.create_task(api.client.post(_turns(busy), json={"input": "talk"}, headers={**stranger, **JSON}))
    turn_id = await running_turn(api.client, stranger, busy)
    mine = await create_session(api.client, alice, (await create_agent(api.client, alice))["id"])
    response = await api.client.post(_turns(mine), json={"input": "hi"}, headers={**alice, **JSON})
    assert response.json()["status"] == "completed"
    await api.client.post(f"/turns/{turn_id}/cancel", headers=stranger)
    await first


async def test_a_spent_daily_quota_answers_429_until_the_day_ends(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 50})
    end = await _plant_usage(api, tenant, "day", 50)
    session = await create_session(api.client, alice, (await create_agent(api.client, alice))["id"])

    refused = await api.client.post(_turns(session), json={"input": "hi"}, headers=alice)

    body = problem(refused, 429, "quota_exceeded")
    assert "50 of 50" in body["detail"]
    left = (end - datetime.now(UTC)).total_seconds()
    assert left - 60 <= int(refused.headers["Retry-After"]) <= left + 1
    assert (await api.client.get(_turns(session), headers=alice)).json()["items"] == []


async def test_a_spent_monthly_quota_answers_429_until_the_month_ends(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "month", "tokens": 10})
    end = await _plant_usage(api, tenant, "month", 12)
    session = await create_session(api.client, alice, (await create_agent(api.client, alice))["id"])
    refused = await api.client.post(_turns(session), json={"input": "hi"}, headers=alice)
    problem(refused, 429, "quota_exceeded")
    assert int(refused.headers["Retry-After"]) > (end - datetime.now(UTC)).total_seconds() - 60


async def test_a_quota_with_tokens_left_lets_the_turn_start(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 100000})
    await _plant_usage(api, tenant, "day", 99999)
    session = await create_session(api.client, alice, (await create_agent(api.client, alice))["id"])
    response = await api.client.post(_turns(session), json={"input": "hi"}, headers={**alice, **JSON})
    assert response.status_code == 200, response.text


async def test_yesterdays_spent_quota_does_not_refuse_today(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 10})
    yesterday = period_bounds("day", datetime.now(UTC))[0].replace(year=2000)
    async with api.app.state.container.engine.begin() as conn:
        await conn.execute(
            insert(QuotaLedger).values(
                tenant_id=tenant, period_start=yesterday, used=99, reserved=0, updated_at=yesterday
            )
        )
    config = scripted_config({"text": "fine"})
    session = await create_session(api.client, alice, (await create_agent(api.client, alice, config))["id"])
    response = await api.client.post(_turns(session), json={"input": "hi"}, headers={**alice, **JSON})
    assert response.json()["status"] == "completed"


async def test_concurrent_starts_on_two_replicas_never_pass_the_ceiling(
    api: Api, admin: dict[str, str], alice: dict[str, str], database_url: str, tmp_path: Any
) -> None:
    if api.backend != "postgresql":
        return  # replicas share PostgreSQL; the SQLite file serves one process
    await put_limits(api.client, admin, max_concurrent_turns=2)
    sessions = [await slow_session(api.client, alice) for _ in range(8)]
    async with running_app(make_settings(database_url, tmp_path)) as (_, other):
        clients = [api.client, other] * 4
        starts = [
            asyncio.create_task(c.post(_turns(s), json={"input": "go"}, headers={**alice, **JSON}))
            for c, s in zip(clients, sessions, strict=True)
        ]
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            while sum(t.done() for t in starts) < 6:
                await asyncio.sleep(0.02)
        refused = [t.result() for t in starts if t.done()]
        assert [r.status_code for r in refused] == [429] * 6
        running = [
            await running_turn(api.client, alice, s) for s, t in zip(sessions, starts, strict=True) if not t.done()
        ]
        assert len(running) == 2
        for turn_id in running:
            await api.client.post(f"/turns/{turn_id}/cancel", headers=alice)
        await asyncio.gather(*starts)


async def _status(api: Api, headers: dict[str, str], turn_id: str, *wanted: str) -> str:
    """The turn's status once it is one of `wanted` (bounded polling)."""
    async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
        while (status := (await api.client.get(f"/turns/{turn_id}", headers=headers)).json()["status"]) not in wanted:
            await asyncio.sleep(0.05)
    return str(status)


async def _started(api: Api, headers: dict[str, str], session: dict[str, Any], **body: Any) -> str:
    response = await api.client.post(
        _turns(session), json={"input": "talk", **body}, headers={**headers, "Prefer": "respond-async"}
    )
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


async def test_a_queued_turn_starts_only_into_a_free_concurrency_slot(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_concurrent_turns=2)
    first, second = await slow_session(api.client, alice), await slow_session(api.client, alice, {"text": LONG_TEXT})
    holder = await _started(api, alice, first)
    ahead = await _started(api, alice, second)
    queued = await _started(api, alice, second, multitask_strategy="enqueue")
    await _status(api, alice, ahead, "running")
    await put_limits(api.client, admin, max_concurrent_turns=1)

    await api.client.post(f"/turns/{ahead}/cancel", headers=alice)
    await asyncio.sleep(1.5)  # the queued turn's watcher has looked at least once: it must find no free slot
    assert await _status(api, alice, queued, "queued", "running") == "queued"

    await api.client.post(f"/turns/{holder}/cancel", headers=alice)
    assert await _status(api, alice, queued, "running") == "running"
    third = await create_session(api.client, alice, (await create_agent(api.client, alice))["id"])
    problem(await api.client.post(_turns(third), json={"input": "hi"}, headers=alice), 429, "too_many_turns")
    await api.client.post(f"/turns/{queued}/cancel", headers=alice)
