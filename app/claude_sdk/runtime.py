"""The Claude SDK runtime: a turn's loop run by Claude Code, behind the engine's `TurnRuntime` port.

Per session, one Claude Code process from the pool (app/claude_sdk/pool.py), reused by its turns.
A turn binds the session's callbacks to itself (app/claude_sdk/router.py), sends the input and
records what comes back (app/claude_sdk/turn.py). A user's cancel interrupts Claude Code and waits
for it to settle its turn, so the session's next turn starts clean; if it does not within
`SETTLE_SECONDS`, the process is closed (the next turn resumes the conversation from its transcript).
A cancel the engine makes with a message (a drain's hand-over, a run fenced off because another
replica took its turn) also closes the process after the interrupt: the turn continues from the
transcript, here or elsewhere. (Closing without the interrupt would leave Claude Code up to 5 s
after its stdin closes, in which it answers its pending calls itself and calls the model again.)

How a run opens — a new prompt, an approval's resume at the call that waited, or the continuation
of a turn whose replica was lost — is app/claude_sdk/opening.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeSDKClient, ResultMessage

from app.claude_sdk.opening import open_run
from app.claude_sdk.options import Provider, SessionFolders, session_options
from app.claude_sdk.pool import ClientPool, PoolFull
from app.claude_sdk.router import SessionRouter
from app.claude_sdk.surface import ToolSurface, claude_tools
from app.claude_sdk.turn import SdkTurn
from app.providers.base import ProviderError
from app.providers.registry import EndpointResolver
from app.runtime.port.journal import Progress, TurnJournal, TurnRun, TurnServices
from app.tools.mcp_gateway import McpGatewayUnavailable

log = logging.getLogger(__name__)
SETTLE_SECONDS = 10.0


@dataclasses.dataclass(slots=True)
class SessionClient:
    """A session's SDK client with the router its callbacks go through (what the pool keeps)."""

    sdk: ClaudeSDKClient
    router: SessionRouter
    provider: Provider
    """The key and URL its process was started with (a turn resolving another restarts it)."""

    async def connect(self) -> None:
        await self.sdk.connect()

    async def disconnect(self) -> None:
        await self.sdk.disconnect()


class ClaudeSdkRuntime:
    def __init__(
        self, *, pool: ClientPool, data_dir: Path, endpoints: EndpointResolver, cli_path: Path | None = None
    ) -> None:
        self.pool = pool
        self.data_dir = data_dir
        self.endpoints = endpoints
        """The tenant's key (its credential, or the operator's environment key), as for the LangGraph runtime."""
        self.cli_path = cli_path

    def admits(self, session_id: uuid.UUID) -> bool:
        """Whether a turn of this session would get a Claude Code process now (checked before it starts)."""
        return self.pool.admits(session_id)

    async def close_session(self, session_id: uuid.UUID) -> None:
        await self.pool.close(session_id)

    async def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]:
        try:
            endpoint = await self.endpoints.resolve(run.ident.tenant_id, run.snapshot["model"])
        except ProviderError as exc:
            yield _failed(exc.code, exc.message)
            return
        provider = Provider(api_key=endpoint.api_key, base_url=endpoint.base_url)
        try:
            specs = await services.tools.specs()
        except McpGatewayUnavailable as exc:
            yield _failed("mcp_gateway_unavailable", str(exc))
            return
        folders = SessionFolders.of(self.data_dir, run.ident.session_id)
        native = claude_tools(list(run.snapshot.get("tools", [])))
        surface = ToolSurface(served=tuple(specs), native=tuple(native), workdir=folders.work)
        turn = SdkTurn(run, services, journal, surface)
        opening = await open_run(turn, run, folders)
        if isinstance(opening, Progress):
            yield opening
            return
        if opening.restart or self._started_with_another(run.ident.session_id, provider):
            await self.pool.close(run.ident.session_id)

        async def open_client(session_id: uuid.UUID) -> SessionClient:
            router = SessionRouter()
            options = session_options(
                session_id=session_id,
                snapshot=run.snapshot,
                folders=folders,
                provider=provider,
                native_tools=native,
                server=surface.server(router.run_tool) if surface.served else None,
                can_use_tool=router.can_use_tool,
                hooks=router.hooks(),
                cli_path=self.cli_path,
                resume_at=opening.resume_at,
            )
            return SessionClient(ClaudeSDKClient(options), router, provider)

        try:
            async with self.pool.use(run.ident.session_id, open_client) as lease:
                client = lease.client
                assert isinstance(client, SessionClient)
                client.router.bind(turn.gate, turn.run_tool)
                try:
                    async for progress in turn.drive(client.sdk, opening.prompt):
                        yield progress
                except asyncio.CancelledError as stopped:
                    await _despite_cancel(self._settle_cancelled(client, run.ident.session_id))
                    if stopped.args:  # the engine's own stop (a hand-over, a fence): the turn goes on elsewhere
                        await _despite_cancel(self.pool.close(run.ident.session_id))
                    raise
                finally:
                    client.router.unbind()
        except PoolFull as exc:
            yield _failed("too_many_turns", str(exc))

    def _started_with_another(self, session_id: uuid.UUID, provider: Provider) -> bool:
        """Whether the session's idle process holds another key or URL than this turn resolved (a rotated key)."""
        lease = self.pool.get(session_id)
        return lease is not None and isinstance(lease.client, SessionClient) and lease.client.provider != provider

    async def _settle_cancelled(self, client: SessionClient, session_id: uuid.UUID) -> None:
        """Interrupt Claude Code and read its turn to the end; close the process if it does not settle."""
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                await client.sdk.interrupt()
                async for message in client.sdk.receive_response():
                    if isinstance(message, ResultMessage):
                        return
        except Exception as exc:
            log.warning("Claude Code did not settle a cancelled turn (%s); closing it", type(exc).__name__)
        await self.pool.close(session_id)


async def _despite_cancel(work: Any) -> None:
    task = asyncio.ensure_future(work)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)


def _failed(code: str, message: str) -> Progress:
    return Progress(status="failed", error={"code": code, "message": message})
