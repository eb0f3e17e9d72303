"""The pool of Claude Code processes: reused per session, bounded, closed when idle or on close.

Real clients and processes (each start costs a couple of seconds, so the tests start few).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeSDKClient

from app.claude_sdk.options import Provider, SessionFolders, session_options
from app.claude_sdk.pool import ClientPool, Opener, PoolFull, SdkClient
from app.claude_sdk.router import SessionRouter
from tests.claude_sdk.conftest import MOCK_KEY, claude_children
from tests.claude_sdk.mock_anthropic import MockAnthropic


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def opener(mock_anthropic: MockAnthropic, data_dir: Path) -> Opener:
    async def open_client(session_id: uuid.UUID) -> SdkClient:
        router = SessionRouter()
        options = session_options(
            session_id=session_id,
            snapshot={"model": {"provider": "anthropic", "name": "claude-sonnet-4-5"}},
            folders=SessionFolders.of(data_dir, session_id),
            provider=Provider(api_key=MOCK_KEY, base_url=mock_anthropic.base_url),
            native_tools=[],
            server=None,
            can_use_tool=router.can_use_tool,
            hooks=router.hooks(),
        )
        return ClaudeSDKClient(options)

    return open_client


async def test_a_session_reuses_its_process_and_closing_the_session_ends_it(opener: Opener) -> None:
    pool = ClientPool(max_sessions=2, idle_seconds=60)
    session = uuid.uuid4()
    before = claude_children()
    try:
        async with pool.use(session, opener) as first:
            started = claude_children() - before
        async with pool.use(session, opener) as second:
            assert claude_children() - before == started
        assert second is first
        assert first.turns == 2
        assert len(started) == 1
        assert first.started_seconds > 0

        assert await pool.close(session) is True
        assert claude_children() - before == set()
        assert await pool.close(session) is False
    finally:
        await pool.close_all()


async def test_over_the_bound_a_new_session_is_refused_while_all_are_busy(opener: Opener) -> None:
    pool = ClientPool(max_sessions=1, idle_seconds=60)
    busy, other = uuid.uuid4(), uuid.uuid4()
    before = claude_children()
    try:
        async with pool.use(busy, opener):
            with pytest.raises(PoolFull):
                async with pool.use(other, opener):
                    pass
            assert len(claude_children() - before) == 1
        async with pool.use(other, opener):
            assert pool.get(busy) is None  # the idle one made room
            assert pool.get(other) is not None
            assert len(claude_children() - before) == 1
    finally:
        await pool.close_all()
    assert claude_children() - before == set()


async def test_an_idle_session_is_closed_after_the_idle_timeout(opener: Opener) -> None:
    clock = Clock()
    pool = ClientPool(max_sessions=2, idle_seconds=30, clock=clock)
    session = uuid.uuid4()
    before = claude_children()
    try:
        async with pool.use(session, opener):
            clock.now += 100
            assert await pool.reap() == 0  # a session in a turn is never idle
        clock.now += 29
        assert await pool.reap() == 0
        assert len(claude_children() - before) == 1
        clock.now += 1
        assert await pool.reap() == 1
        assert pool.get(session) is None
        assert claude_children() - before == set()
    finally:
        await pool.close_all()
