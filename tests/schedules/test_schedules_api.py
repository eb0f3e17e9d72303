from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session


async def _create(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> httpx.Response:
    return await client.post("/schedules", json={"cron": "0 9 * * 1-5", "input": "report", **body}, headers=headers)


async def test_a_schedule_names_its_next_tick_in_its_time_zone(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    response = await _create(client, alice, agent_id=agent["id"], timezone="Europe/Berlin")
    assert response.status_code == 201, response.text
    schedule = response.json()
    assert schedule["session"] == "new"
    assert schedule["owner"] == "alice"
    tick = datetime.fromisoformat(schedule["next_fire_at"])
    local = tick.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (9, 0)
    assert local.weekday() < 5
    assert tick - datetime.now(tick.tzinfo) <= timedelta(days=4)
    listed = (await client.get("/schedules", headers=alice)).json()["items"]
    assert [s["id"] for s in listed] == [schedule["id"]]
    assert (await client.get(f"/schedules/{schedule['id']}/firings", headers=alice)).json()["items"] == []


async def test_schedules_are_their_owners_and_admins_only(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice)
    schedule = (await _create(client, alice, agent_id=agent["id"])).json()
    for other in (auth_headers(tenant, "bob"), auth_headers("another-tenant", "alice", roles=["admin"])):
        assert (await client.get(f"/schedules/{schedule['id']}", headers=other)).status_code == 404
        assert (await client.delete(f"/schedules/{schedule['id']}", headers=other)).status_code == 404
        assert (await client.get("/schedules", headers=other)).json()["items"] == []
    admin = auth_headers(tenant, "root", roles=["admin"])
    assert (await client.get(f"/schedules/{schedule['id']}", headers=admin)).status_code == 200
    assert (await client.delete(f"/schedules/{schedule['id']}", headers=alice)).status_code == 204
    assert (await client.get(f"/schedules/{schedule['id']}", headers=alice)).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "every morning"}, "cron"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * * * * *"}, "cron"),
        ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"cron": "0 9 * * *", "timezone": "../../etc/passwd"}, "timezone"),
        ({"cron": "0 9 * * *", "session": "yesterday"}, "session"),
        ({"cron": "0 0 31 2 *"}, "cron"),
        ({"cron": "0 0 30 2 *", "timezone": "Europe/Berlin"}, "cron"),
        ({"cron": "30 12 31 4,6,9,11 * 0"}, "cron"),
        ({"cron": "0 9 * * *", "timezone": "America"}, "timezone"),
        ({"cron": "0 9 * * *", "timezone": "Etc"}, "timezone"),
        ({"cron": "0 9 * * *", "timezone": "America/"}, "timezone"),
    ],
)
async def test_bad_schedules_are_422_naming_the_field(
    client: httpx.AsyncClient, alice: dict[str, str], body: dict[str, Any], field: str
) -> None:
    agent = await create_agent(client, alice)
    response = await _create(client, alice, agent_id=agent["id"], **body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert field in response.json()["errors"][0]["loc"]
    assert body[field] not in response.text
    assert (await client.get("/schedules", headers=alice)).json()["items"] == []


async def test_a_schedule_on_an_archived_agent_is_409(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    await client.delete(f"/agents/{agent['id']}", headers=alice)
    response = await _create(client, alice, agent_id=agent["id"])
    assert response.status_code == 409
    assert "archived" in response.json()["detail"]


async def test_a_schedule_may_only_name_the_callers_open_session_of_that_agent(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent, other_agent = await create_agent(client, alice), await create_agent(client, alice)
    own = await create_session(client, alice, agent["id"])
    bob = auth_headers(tenant, "bob")
    bobs = await create_session(client, bob, agent["id"])
    assert (await _create(client, alice, agent_id=agent["id"], session=bobs["id"])).status_code == 404
    assert (await _create(client, alice, agent_id=other_agent["id"], session=own["id"])).status_code == 422
    await client.delete(f"/sessions/{own['id']}", headers=alice)
    assert (await _create(client, alice, agent_id=agent["id"], session=own["id"])).status_code == 409
    unknown = "00000000-0000-0000-0000-000000000000"
    assert (await _create(client, alice, agent_id=agent["id"], session=unknown)).status_code == 404
