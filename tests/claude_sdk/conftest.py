"""The loopback Anthropic API every Claude SDK test talks to (one per run: Claude Code is slow to start)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.claude_sdk.mock_anthropic import MockAnthropic

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


def claude_children() -> set[int]:
    """Pids of the Claude Code processes this test process started that are still alive."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            exe = os.readlink(entry / "exe")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and exe.endswith("/claude"):
            pids.add(int(entry.name))
    return pids
