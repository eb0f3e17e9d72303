"""GET/PUT /limits: tenant ceilings, admin-only changes, and bad input that changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TokenFactory
from tests.factories import create_agent, scripted_config
from tests.usage.conftest import Api
from tests.usage.support import problem, put_limits

FULL = {
    "max_loops": 5,
    "max_output_tokens": 1000,
    "max_total_tokens": 5000,
    "max_concurrent_turns": 3,
    "token_quota": {"period": "day", "tokens": 100000},
}
NOTHING = {
    "max_loops": None, "max_output_tokens": None, "max_total_tokens": None, "max_concurrent_turns": None,
    "token_quota": None,
}  # fmt: skip


def _ceilings(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in NOTHING}


async def test_a_tenant_without_limits_has_no_ceiling(api: Api, alice: dict[str, str]) -> None:
    response = await api.client.get("/limits", headers=alice)
    assert response.status_code == 200
    assert _ceilings(response.json()) == NOTHING


async def test_an_admin_sets_the_ceilings_and_every_user_of_the_tenant_reads_them(
    api: Api, admin: dict[str, str], alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    stored = await put_limits(api.client, admin, **FULL)
    assert _ceilings(stored) == FULL
    assert stored["updated_by"] == "root"
    assert _ceilings((await api.client.get("/limits", headers=alice)).json()) == FULL
    other_tenant = auth_headers("another-tenant-" + alice["Authorization"][-8:], "alice")
    assert _ceilings((await api.client.get("/limits", headers=other_tenant)).json()) == NOTHING


async def test_put_replaces_the_whole_document(api: Api, admin: dict[str, str]) -> None:
    await put_limits(api.client, admin, **FULL)
    stored = await put_limits(api.client, admin, max_loops=2)
    assert _ceilings(stored) == {**NOTHING, "max_loops": 2}


async def test_a_user_without_role_admin_cannot_change_them(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_loops=4)
    problem(await api.client.put("/limits", json=FULL, headers=alice), 403)
    assert (await api.client.get("/limits", headers=alice)).json()["max_loops"] == 4


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_loops": 0}, "max_loops"),
        ({"max_output_tokens": -5}, "max_output_tokens"),
        ({"max_total_tokens": 0}, "max_total_tokens"),
        ({"max_concurrent_turns": 0}, "max_concurrent_turns"),
        ({"token_quota": {"period": "week", "tokens": 10}}, "period"),
        ({"token_quota": {"period": "day", "tokens": 0}}, "tokens"),
        ({"token_quota": {"period": "day"}}, "tokens"),
        ({"max_loops": 3, "bogus": 1}, "bogus"),
    ],
)
async def test_bad_ceilings_are_refused_and_change_nothing(
    api: Api, admin: dict[str, str], body: dict[str, Any], field: str
) -> None:
    await put_limits(api.client, admin, **FULL)
    refused = problem(await api.client.put("/limits", json=body, headers=admin), 422)
    assert field in {loc for error in refused["errors"] for loc in error["loc"]}
    assert _ceilings((await api.client.get("/limits", headers=admin)).json()) == FULL


async def test_a_ceiling_below_an_agents_own_limit_is_refused_and_names_the_agent(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_loops=10)
    agent = await create_agent(api.client, alice, scripted_config(limits={"max_loops": 6}), name="six-loops")
    refused = problem(
        await api.client.put("/limits", json={"max_loops": 4}, headers=admin), 422, "ceiling_below_agent_limit"
    )
    assert refused["agents"] == [
        {"agent_id": agent["id"], "name": "six-loops", "field": "max_loops", "limit": 6, "ceiling": 4}
    ]
    assert (await api.client.get("/limits", headers=admin)).json()["max_loops"] == 10


async def test_agents_that_leave_a_limit_unset_or_are_archived_do_not_block_a_lower_ceiling(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await create_agent(api.client, alice, scripted_config())
    archived = await create_agent(api.client, alice, scripted_config(limits={"max_output_tokens": 9000}))
    assert (await api.client.delete(f"/agents/{archived['id']}", headers=alice)).status_code == 204
    stored = await put_limits(api.client, admin, max_loops=1, max_output_tokens=10)
    assert (stored["max_loops"], stored["max_output_tokens"]) == (1, 10)


async def test_limits_need_a_token(api: Api) -> None:
    problem(await api.client.get("/limits"), 401)
    problem(await api.client.put("/limits", json=FULL), 401)


async def test_openapi_documents_the_resources(api: Api) -> None:
    paths = (await api.client.get("/openapi.json")).json()["paths"]
    assert {"get", "put"} <= set(paths["/limits"])
    assert "get" in paths["/usage"]
