"""Two real replicas (`agent-runtime serve` processes) on a PostgreSQL database of their own, and a
recording MCP gateway on loopback that both reach.

The database is this package's alone: a killed replica leaves turns that any live replica of the
database may continue, so no other test's app may share it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import TEST_SECRET, migrated_database
from tests.continuation.replicas import ReplicaPool
from tests.continuation.support import TEAM
from tests.engines import direct_engine
from tests.idempotent_gateway import IdempotentGateway, fresh, serve_idempotent_gateway
from tests.live_server import LiveServer, spawn_server

GRACE_SECONDS = 4
"""SHUTDOWN_GRACE_SECONDS of the replicas: short turns finish inside it, long ones are handed over."""
CLIENT_TIMEOUT_SECONDS = 60.0


@pytest.fixture(scope="package")
def replica_database_url() -> Iterator[str]:
    with migrated_database("agent_runtime_replicas") as url:
        yield url


@pytest.fixture(scope="package")
async def replica_sql(replica_database_url: str) -> AsyncIterator[AsyncEngine]:
    async with direct_engine(replica_database_url) as engine:
        yield engine


@pytest.fixture(scope="package")
def recording_gateway() -> Iterator[IdempotentGateway]:
    with serve_idempotent_gateway(team=TEAM) as gateway:
        yield gateway


@pytest.fixture
def gateway(recording_gateway: IdempotentGateway) -> Iterator[IdempotentGateway]:
    with fresh(recording_gateway) as served:
        yield served


@pytest.fixture(scope="package")
def replica_pool(
    replica_database_url: str, recording_gateway: IdempotentGateway, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReplicaPool]:
    env = {
        "MCP_GATEWAY_URL": recording_gateway.url,
        "SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS),
        "PROVIDER_ALLOWED_HOSTS": "127.0.0.1",  # a test's loopback model server
    }
    work_dir = tmp_path_factory.mktemp("replicas")
    pool = ReplicaPool(lambda: spawn_server(replica_database_url, TEST_SECRET, work_dir, env_overrides=env))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def replicas(replica_pool: ReplicaPool, gateway: IdempotentGateway) -> Iterator[list[LiveServer]]:
    """[A, B]: A is this test's own to kill or drain, B continues what A leaves. A failing test prints
    what both logged."""
    a, b = replica_pool.take(), replica_pool.survivor
    b_log_start = len(b.log())
    try:
        yield [a, b]
    finally:
        a.stop()
        print(f"----- replica A log -----\n{a.log()[-20000:]}")
        print(f"----- replica B log -----\n{b.log()[b_log_start:][-20000:]}")


@pytest.fixture
async def clients(replicas: list[LiveServer]) -> AsyncIterator[list[httpx.AsyncClient]]:
    async with (
        httpx.AsyncClient(base_url=replicas[0].base_url, timeout=CLIENT_TIMEOUT_SECONDS) as on_a,
        httpx.AsyncClient(base_url=replicas[1].base_url, timeout=CLIENT_TIMEOUT_SECONDS) as on_b,
    ):
        yield [on_a, on_b]
