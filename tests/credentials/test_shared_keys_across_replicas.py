"""Two replicas on one database, each with a data folder of its own (as pods are), read their key
files from one place (the Secret deploy/k8s mounts in every pod): a credential written through one
replica is opened and used by the other. A replica that generated its own key file, as each pod did
when the manifests gave every pod its own `/data`, cannot open it."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_SECRET, TokenFactory, migrated_database
from tests.live_server import LiveServer, spawn_server
from tests.llm_servers import FINAL_TEXT, llm_server

pytestmark = pytest.mark.timeout(300)
GPT = {"model": {"provider": "openai", "name": "gpt-x"}, "tools": ["builtin:calculator"]}
KEY = "sk-shared-across-replicas-0123456789"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, LiveServer, LiveServer]]:
    keys = tmp_path_factory.mktemp("mounted-secret")
    for name in ("secrets.key", "webhook-secrets.key"):
        (keys / name).write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    shared = {
        "SECRETS_KEY_FILE": str(keys / "secrets.key"),
        "WEBHOOK_SECRETS_KEY_FILE": str(keys / "webhook-secrets.key"),
        "PROVIDER_ALLOWED_HOSTS": "127.0.0.1",
    }
    with migrated_database("agent_runtime_shared_keys") as url:
        servers = [
            spawn_server(url, TEST_SECRET, _folder(tmp_path_factory, "pod-a"), env_overrides=shared),
            spawn_server(url, TEST_SECRET, _folder(tmp_path_factory, "pod-b"), env_overrides=shared),
            spawn_server(url, TEST_SECRET, _folder(tmp_path_factory, "pod-own-data"),
                         env_overrides={"PROVIDER_ALLOWED_HOSTS": "127.0.0.1"}),
        ]  # fmt: skip
        try:
            for server in servers:
                server.wait_ready()
            yield servers[0], servers[1], servers[2]
        finally:
            for server in servers:
                server.terminate()
            for server in servers:
                server.stop()


def _folder(factory: pytest.TempPathFactory, name: str) -> Path:
    return factory.mktemp(name)


async def _turn(base_url: str, headers: dict[str, str], agent_id: str) -> dict[str, object]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        session = (await client.post("/sessions", json={"agent_id": agent_id}, headers=headers)).json()
        response = await client.post(
            f"/sessions/{session['id']}/turns",
            json={"input": "6*7?"},
            headers={**headers, "Accept": "application/json"},
        )
        assert response.status_code == 200, response.text
        return dict(response.json())


async def test_a_credential_written_through_one_replica_is_used_by_the_other(
    replicas: tuple[LiveServer, LiveServer, LiveServer], tenant: str, auth_headers: TokenFactory
) -> None:
    a, b, own_data = replicas
    admin = auth_headers(tenant, "root", roles=["admin"])
    async with llm_server("openai") as upstream:
        async with httpx.AsyncClient(base_url=a.base_url, timeout=60) as on_a:
            stored = await on_a.put(
                "/credentials/openai", json={"provider": "openai", "api_key": KEY, "base_url": upstream.url},
                headers=admin,
            )  # fmt: skip
            assert stored.status_code == 201, stored.text
            agent = await on_a.post(
                "/agents", json={"name": "gpt", "config": GPT},
                headers=admin,
            )  # fmt: skip
        agent_id = agent.json()["id"]

        on_b = await _turn(b.base_url, admin, agent_id)
        assert (on_b["status"], on_b["final_output"]) == ("completed", FINAL_TEXT), on_b
        assert {r.headers["authorization"] for r in upstream.requests} == {f"Bearer {KEY}"}

        apart = await _turn(own_data.base_url, admin, agent_id)
        assert apart["status"] == "failed"
        assert apart["error"]["code"] == "provider_not_configured"  # type: ignore[index]
        assert "cannot be decrypted" in apart["error"]["message"]  # type: ignore[index]
