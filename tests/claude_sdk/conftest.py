"""The loopback Anthropic API every Claude SDK test talks to (one per run: Claude Code is slow to start)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import Sql, open_sql
from bench.claude_sdk import claude_children
from tests.claude_sdk.mock_anthropic import MockAnthropic

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
