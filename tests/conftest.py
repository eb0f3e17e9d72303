"""Test fixtures: one real PostgreSQL database per run (created, migrated, dropped).

Tests are isolated by tenant: every test gets tenant ids of its own, so rows of other tests are
invisible through the same tenant scoping production relies on.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from asgi_lifespan import LifespanManager
from fastapi import FastAPI
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.auth.verify import mint_user_token
from app.core.migrate import upgrade_head
from app.main import create_app
from app.settings import AuthSettings, DbSettings, Settings, WebhookSettings
from tests.engines import direct_engine

pytest_plugins = ["tests.backends"]

TEST_SECRET = "test-secret-of-sufficient-length-0123456789"
QUIET_POLL_SECONDS = 86_400.0
BASE_URL = os.environ.get("TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres")


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def migrated_database(prefix: str) -> Iterator[str]:
    """A PostgreSQL database of its own, migrated to head, dropped afterwards; yields its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = _dsn(BASE_URL)

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    url = make_url(BASE_URL).set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_head(url)
        yield url
    finally:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    with migrated_database("agent_runtime_test") as url:
        yield url


@pytest.fixture(scope="session")
async def sql(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A direct engine on the test database, to read or plant rows the API does not show."""
    async with direct_engine(database_url) as engine:
        yield engine


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def settings(database_url: str, data_dir: Path) -> Settings:
    """The shared app's: its webhook worker looks once a day, so it never claims the deliveries of a
    test's own app (that one allows its loopback receiver; the shared one would count a blocked attempt)."""
    return make_settings(database_url, data_dir, webhooks=WebhookSettings(poll_seconds=QUIET_POLL_SECONDS))


def make_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "db": DbSettings(url=database_url, pool_size=5, max_overflow=10),
        "auth": AuthSettings(jwt_secret=TEST_SECRET),
    }
    values.update(overrides)
    return Settings(**values)


@asynccontextmanager
async def running_app(settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = create_app(settings)
    async with LifespanManager(app, startup_timeout=30, shutdown_timeout=30) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", timeout=30) as client:
            yield app, client


@pytest.fixture(scope="session")
async def app_and_client(settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    async with running_app(settings) as pair:
        yield pair


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
async def backend_app(
    request: pytest.FixtureRequest, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """An app of the module's own on each backend: the shared PostgreSQL database, then a SQLite file."""
    folder: Path = tmp_path_factory.mktemp(request.param)
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{folder / 'app.db'}"
    async with running_app(make_settings(url, folder)) as pair:
        yield pair


@pytest.fixture(params=["postgresql", "sqlite"])
async def any_backend(
    request: pytest.FixtureRequest, client: httpx.AsyncClient, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The shared PostgreSQL app, or the same app on a SQLite file of this test's own."""
    if request.param == "postgresql":
        yield client
        return
    async with running_app(make_settings(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}", tmp_path)) as (_, own):
        yield own


@pytest.fixture
def app(app_and_client: tuple[FastAPI, httpx.AsyncClient]) -> FastAPI:
    return app_and_client[0]


@pytest.fixture
def client(app_and_client: tuple[FastAPI, httpx.AsyncClient]) -> httpx.AsyncClient:
    return app_and_client[1]


TokenFactory = Callable[..., dict[str, str]]


@pytest.fixture
def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def auth_headers() -> TokenFactory:
    def make(tenant: str, sub: str = "alice", roles: list[str] | None = None, ttl: int = 600) -> dict[str, str]:
        token = mint_user_token(TEST_SECRET, tenant_id=tenant, sub=sub, roles=roles or [], ttl_seconds=ttl)
        return {"Authorization": f"Bearer {token}"}

    return make


@pytest.fixture
def alice(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "alice")
