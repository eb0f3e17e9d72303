"""The loopback Anthropic API every Claude SDK test talks to (one per run: Claude Code is slow to start),
and the service each test module runs against it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from app.claude_sdk.pool import ClientPool
from app.core.sql import Sql, open_sql
from app.settings import AnthropicSettings, ClaudeSdkSettings, ProviderSettings, Settings
from bench.claude_sdk import claude_children
from tests.claude_sdk.mock_anthropic import MockAnthropic
from tests.conftest import make_settings, running_app

__all__ = ["MOCK_KEY", "claude_children"]

MOCK_KEY = "sk-ant-mock-key-for-tests-0123456789"


@pytest.fixture(scope="session")
async def mock_anthropic() -> AsyncIterator[MockAnthropic]:
    mock = MockAnthropic()
    await mock.start()
    try:
        yield mock
    finally:
        await mock.stop()


@pytest.fixture
def anthropic(mock_anthropic: MockAnthropic) -> MockAnthropic:
    """The mock with an empty script and log for this test."""
    mock_anthropic.script.clear()
    mock_anthropic.log.clear()
    return mock_anthropic


@pytest.fixture(scope="module")
async def hot_sql(sql: AsyncEngine) -> AsyncIterator[Sql]:
    """The hot-path statement runner the governance reads policies through."""
    runner = await open_sql(sql, max_size=2, acquire_timeout=10)
    try:
        yield runner
    finally:
        await runner.close()


def sdk_settings_for(database_url: str, data_dir: Path, mock: MockAnthropic, **overrides: Any) -> Settings:
    """At most one Claude Code process; the service's own model calls (an autonomous plan) reach the mock too."""
    return make_settings(
        database_url,
        data_dir,
        anthropic=AnthropicSettings(api_key=MOCK_KEY, base_url=mock.base_url, max_retries=0),
        providers=ProviderSettings(allowed_hosts=["127.0.0.1"]),
        claude_sdk=ClaudeSdkSettings(max_sessions=1, idle_seconds=300),
        **overrides,
    )


@pytest.fixture(scope="module")
def sdk_settings(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, mock_anthropic: MockAnthropic
) -> Settings:
    return sdk_settings_for(database_url, tmp_path_factory.mktemp("sdk-data"), mock_anthropic)


@pytest.fixture(scope="module")
async def sdk_app(sdk_settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    async with running_app(sdk_settings) as pair:
        yield pair


@pytest.fixture
def api(sdk_app: tuple[FastAPI, httpx.AsyncClient]) -> httpx.AsyncClient:
    return sdk_app[1]


@pytest.fixture
def pool(sdk_app: tuple[FastAPI, httpx.AsyncClient]) -> ClientPool:
    """The service's pool of Claude Code processes."""
    return sdk_app[0].state.container.claude_sdk.pool  # type: ignore[no-any-return]
