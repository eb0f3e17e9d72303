"""GET /usage: token totals of the tenant (admin) or of one's own sessions, grouped, with the quota."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert

from app.governance.period import period_bounds
from app.models import QuotaLedger
from tests.factories import create_agent, create_session, scripted_config
from tests.usage.conftest import Api
from tests.usage.support import problem, put_limits

JSON = {"Accept": "application/json"}


async def _turn(api: Api, headers: dict[str, str], agent: dict[str, Any], text: str) -> dict[str, Any]:
    session = await create_session(api.client, headers, agent["id"])
    response = await api.client.post(
        f"/sessions/{session['id']}/turns", json={"input": text}, headers={**headers, **JSON}
    )
    assert response.status_code == 200, response.text
    return dict(response.json()["usage"])


async def _usage(api: Api, headers: dict[str, str], **params: str) -> dict[str, Any]:
    response = await api.client.get("/usage", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture
async def two_users(api: Api, alice: dict[str, str], bob: dict[str, str]) -> dict[str, Any]:
    """alice: one turn on agent `a`; bob: one turn on agent `b` (the scripted model: a token a word)."""
    a = await create_agent(api.client, alice, scripted_config({"text": "one two three"}), name="a")
    b = await create_agent(api.client, bob, scripted_config({"text": "four five"}), name="b")
    return {"a": a, "b": b, "alice": await _turn(api, alice, a, "hello there"), "bob": await _turn(api, bob, b, "hi")}


def _sum(*usages: dict[str, int]) -> dict[str, int]:
    inp, out = sum(u["input_tokens"] for u in usages), sum(u["output_tokens"] for u in usages)
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}


async def test_an_admin_sees_the_tenant_by_user(api: Api, admin: dict[str, str], two_users: dict[str, Any]) -> None:
    report = await _usage(api, admin, group_by="user")
    assert report["scope"] == "tenant"
    by_user = {i["user"]: {k: i[k] for k in ("input_tokens", "output_tokens", "total_tokens")} for i in report["items"]}
    assert by_user == {"alice": _sum(two_users["alice"]), "bob": _sum(two_users["bob"])}
    assert report["totals"] == {**_sum(two_users["alice"], two_users["bob"]), "calls": 2}
    assert report["quota"] is None


async def test_a_user_sees_only_their_own_sessions(api: Api, alice: dict[str, str], two_users: dict[str, Any]) -> None:
    report = await _usage(api, alice, group_by="agent,model")
    assert report["scope"] == "own"
    assert [(i["agent_id"], i["model"], i["calls"]) for i in report["items"]] == [(two_users["a"]["id"], "scripted", 1)]
    assert report["totals"] == {**_sum(two_users["alice"]), "calls": 1}


async def test_grouping_by_day_names_the_utc_date(api: Api, admin: dict[str, str], two_users: dict[str, Any]) -> None:
    report = await _usage(api, admin, group_by="day")
    assert [(i["day"], i["calls"]) for i in report["items"]] == [(datetime.now(UTC).date().isoformat(), 2)]
    assert report["items"][0]["user"] is None


async def test_a_range_that_misses_the_turns_sums_to_zero(
    api: Api, admin: dict[str, str], two_users: dict[str, Any]
) -> None:
    report = await _usage(api, admin, **{"from": "2020-01-01T00:00:00Z", "to": "2020-02-01T00:00:00Z"})
    assert report["totals"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "calls": 0}
    assert report["from"].startswith("2020-01-01")


async def test_the_quota_shows_used_and_left(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 1000})
    start, end = period_bounds("day", datetime.now(UTC))
    async with api.app.state.container.engine.begin() as conn:
        await conn.execute(
            insert(QuotaLedger).values(tenant_id=tenant, period_start=start, used=300, reserved=50, updated_at=start)
        )
    quota = (await _usage(api, alice))["quota"]
    assert {k: quota[k] for k in ("period", "tokens", "used", "reserved", "left")} == {
        "period": "day", "tokens": 1000, "used": 300, "reserved": 50, "left": 650,
    }  # fmt: skip
    assert datetime.fromisoformat(quota["period_end"]) == end


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2026-03-02T00:00:00Z", "to": "2026-03-01T00:00:00Z"}, "from"),
        ({"from": "2024-01-01T00:00:00Z", "to": "2025-06-01T00:00:00Z"}, "to"),
        ({"group_by": "day,week"}, "group_by"),
        ({"from": "yesterday"}, "from"),
    ],
)
async def test_bad_ranges_and_keys_are_refused(
    api: Api, alice: dict[str, str], params: dict[str, str], field: str
) -> None:
    body = problem(await api.client.get("/usage", params=params, headers=alice), 422)
    assert field in {loc for error in body["errors"] for loc in error["loc"]}


async def test_a_range_of_a_year_is_allowed(api: Api, alice: dict[str, str]) -> None:
    to = datetime.now(UTC)
    params = {"from": (to - timedelta(days=366)).isoformat(), "to": to.isoformat()}
    assert (await api.client.get("/usage", params=params, headers=alice)).status_code == 200
