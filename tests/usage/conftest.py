"""An app per backend (PostgreSQL and a SQLite file) for the limits, usage and admission tests."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import TokenFactory


@dataclass
class Api:
    app: FastAPI
    client: httpx.AsyncClient
    backend: str


@pytest.fixture(scope="module")
def api(backend_app: tuple[FastAPI, httpx.AsyncClient]) -> Api:
    app, client = backend_app
    return Api(app, client, app.state.container.engine.dialect.name)


@pytest.fixture
def admin(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", ["admin"])


@pytest.fixture
def bob(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "bob")
