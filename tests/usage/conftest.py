"""An app per backend (PostgreSQL and a SQLite file) for the limits, usage and admission tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import TokenFactory, make_settings, running_app


@dataclass
class Api:
    app: FastAPI
    client: httpx.AsyncClient
    backend: str


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
async def api(
    request: pytest.FixtureRequest, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Api]:
    folder: Path = tmp_path_factory.mktemp("usage")
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{folder / 'usage.db'}"
    async with running_app(make_settings(url, folder)) as (app, client):
        yield Api(app, client, request.param)


@pytest.fixture
def admin(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", ["admin"])


@pytest.fixture
def bob(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "bob")
