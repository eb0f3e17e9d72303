"""The regex bomb: a 27-character pattern whose expansion is 10^9 nodes, sent to the real service
running under a 1 GiB address-space limit, is refused with 422 `invalid_pattern` and the process
lives on (a backtracking engine grew the process until the kernel killed it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.auth.verify import mint_user_token
from tests.conftest import TEST_SECRET
from tests.factories import scripted_config
from tests.live_server import LiveServer, live_server

BOMB = "(?:(?:a{1000}){1000}){1000}"
MEMORY_LIMIT_BYTES = 1 << 30
RULE = {"id": "bomb", "point": "pre_llm", "verdict": "deny", "input_regex": BOMB}


@pytest.fixture(scope="module")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    work_dir: Path = tmp_path_factory.mktemp("bomb")
    with live_server(database_url, TEST_SECRET, work_dir, memory_limit_bytes=MEMORY_LIMIT_BYTES) as running:
        yield running


def _admin(tenant: str) -> dict[str, str]:
    token = mint_user_token(TEST_SECRET, tenant_id=tenant, sub="root", roles=["admin"], ttl_seconds=600)
    return {"Authorization": f"Bearer {token}"}


def _assert_invalid_pattern(response: httpx.Response, loc: list[str]) -> None:
    assert response.status_code == 422, response.text
    problem = response.json()
    assert [(e["loc"], e["type"]) for e in problem["errors"]] == [(loc, "invalid_pattern")]


@pytest.mark.parametrize(
    ("method", "path", "body", "loc"),
    [
        (
            "POST",
            "/agents",
            {"name": "bomb", "config": scripted_config(policies=[RULE])},
            ["body", "config", "policies", "0", "input_regex"],
        ),
        ("PUT", "/policies", {"policies": [RULE]}, ["body", "policies", "0", "input_regex"]),
    ],
    ids=["agent-policy", "tenant-policy"],
)
def test_the_regex_bomb_is_refused_and_the_service_survives(
    server: LiveServer, tenant: str, method: str, path: str, body: dict[str, object], loc: list[str]
) -> None:
    with httpx.Client(base_url=server.base_url, headers=_admin(tenant), timeout=60) as client:
        response = client.request(method, path, json=body)
        _assert_invalid_pattern(response, loc)
        assert server.alive()
        assert client.get("/healthz").status_code == 200
        assert client.get("/policies").json()["policies"] == []
