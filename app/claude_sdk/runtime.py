"""The Claude SDK runtime: a turn's loop run by Claude Code, behind the engine's `TurnRuntime` port.

Per session, one Claude Code process from the pool (app/claude_sdk/pool.py), reused by its turns.
A turn binds the session's callbacks to itself (app/claude_sdk/router.py), sends the input and
records what comes back (app/claude_sdk/turn.py). A cancel interrupts Claude Code and waits for it
to settle its turn, so the session's next turn starts clean; if it does not within
`SETTLE_SECONDS`, the process is closed (the next turn resumes the conversation from its transcript).

An approval resumes the session exactly at the call that waited (docs/decisions.md): the stopped
batch's calls are finished from our side — a result from the ledger, a human's denial, or the
approved call executed through the turn's toolbox — and a new Claude Code process continues the
conversation from the transcript entry of that reply (`resume_session_at`) with a user message
holding the tool results, so the model sees its own call answered.
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

from app.claude_sdk.gate import ToolGate
from app.claude_sdk.options import Provider, SessionFolders, session_options
from app.claude_sdk.pool import ClientPool, PoolFull
from app.claude_sdk.router import SessionRouter
from app.claude_sdk.surface import ToolSurface, claude_tools
from app.claude_sdk.turn import SdkTurn
from app.governance.policy import arguments_hash
from app.providers.base import ToolCall
from app.runtime.events import ToolCallCompleted
from app.runtime.journal import HumanDecision, Progress, TurnJournal, TurnRun, TurnServices
from app.tools.base import ToolResult
from app.tools.mcp_gateway import McpGatewayUnavailable

log = logging.getLogger(__name__)
SETTLE_SECONDS = 10.0


@dataclasses.dataclass(slots=True)
class SessionClient:
    """A session's SDK client with the router its callbacks go through (what the pool keeps)."""

    sdk: ClaudeSDKClient
    router: SessionRouter

    async def connect(self) -> None:
        await self.sdk.connect()

    async def disconnect(self) -> None:
        await self.sdk.disconnect()


class ClaudeSdkRuntime:
    def __init__(self, *, pool: ClientPool, data_dir: Path, provider: Provider, cli_path: Path | None = None) -> None:
        self.pool = pool
        self.data_dir = data_dir
        self.provider = provider
        self.cli_path = cli_path

    def admits(self, session_id: uuid.UUID) -> bool:
        """Whether a turn of this session would get a Claude Code process now (checked before it starts)."""
        return self.pool.admits(session_id)

    async def close_session(self, session_id: uuid.UUID) -> None:
        await self.pool.close(session_id)

    async def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]:
        if not self.provider.api_key:
            yield _failed("provider_not_configured", "no Anthropic API key is configured for the claude_sdk runtime")
            return
        try:
            specs = await services.tools.specs()
        except McpGatewayUnavailable as exc:
            yield _failed("mcp_gateway_unavailable", str(exc))
            return
        folders = SessionFolders.of(self.data_dir, run.ident.session_id)
        native = claude_tools(list(run.snapshot.get("tools", [])))
        surface = ToolSurface(served=tuple(specs), native=tuple(native), workdir=folders.work)
        turn = SdkTurn(run, services, journal, surface)
        gate = ToolGate(surface, services.governance, turn)
        prompt: str | dict[str, Any] = run.input
        resume_at = None
        if run.resumed:
            results = await _finish_batch(turn, gate, run)
            if results is None:
                yield turn.progress
                return
            resume_at = await asyncio.to_thread(folders.tool_use_entry, run.ident.session_id, run.pending[-1].id)
            if resume_at is None:
                yield _failed("sdk_session_lost", "Claude Code's transcript of this session is not on this replica")
                return
            await self.pool.close(run.ident.session_id)  # a new process continues from that entry
            prompt = _tool_results_message(run.pending, results)

        async def open_client(session_id: uuid.UUID) -> SessionClient:
            router = SessionRouter()
            options = session_options(
                session_id=session_id,
                snapshot=run.snapshot,
                folders=folders,
                provider=self.provider,
                native_tools=native,
                server=surface.server(router.run_tool) if surface.served else None,
                can_use_tool=router.can_use_tool,
                hooks=router.hooks(),
                cli_path=self.cli_path,
                resume_at=resume_at,
            )
            return SessionClient(ClaudeSDKClient(options), router)

        try:
            async with self.pool.use(run.ident.session_id, open_client) as lease:
                client = lease.client
                assert isinstance(client, SessionClient)
                client.router.bind(gate, turn.run_tool)
                try:
                    async for progress in turn.drive(client.sdk, prompt):
                        yield progress
                except asyncio.CancelledError:
                    await _despite_cancel(self._settle_cancelled(client, run.ident.session_id))
                    raise
                finally:
                    client.router.unbind()
        except PoolFull as exc:
            yield _failed("too_many_turns", str(exc))

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


async def _finish_batch(turn: SdkTurn, gate: ToolGate, run: TurnRun) -> list[ToolResult] | None:
    """The results of the stopped batch's calls, in order; None if a call needs a human again."""
    results: list[ToolResult] = []
    for call in run.pending:
        turn.calls[call.id] = call
        stored = await turn.journal.ledger_get(turn.key(call.id))
        if stored is not None:
            results.append(stored)
            continue
        human = run.decisions.get(call.id)
        if human is not None:
            result = await _decided(turn, call, human)
        else:
            verdict = await turn.on_verdict(
                call.id, call.name, call.arguments, await gate.judge(call.name, call.arguments, call.id)
            )
            if verdict.outcome in ("requires_approval", "held"):
                return None
            result = turn.results.get(call.id) or await _execute(turn, call)
        results.append(result)
        turn.journal.tool_result(call, result)
        turn.journal.event(
            ToolCallCompleted(tool_call_id=call.id, name=call.name, is_error=result.is_error, result=result.content)
        )
    return results


async def _decided(turn: SdkTurn, call: ToolCall, human: HumanDecision) -> ToolResult:
    if human["decision"] != "approve":
        denied = ToolResult(f"denied by a human: {human['reason'] or 'no reason given'}", is_error=True)
        return await turn.journal.ledger_put(turn.key(call.id), turn.progress.loop_count, call, denied)
    if human["arguments"] is not None:
        call = dataclasses.replace(call, arguments=human["arguments"])
    return await _execute(turn, call)


async def _execute(turn: SdkTurn, call: ToolCall) -> ToolResult:
    """Run a call of the stopped batch from our side (a native tool is allowed when the model makes it again)."""
    key, loop = turn.key(call.id), turn.progress.loop_count
    if turn.surface.is_native(call.name):
        turn.grants.add((call.name, arguments_hash(call.arguments)))
        note = f"approved: make this {call.name} call again, with the same arguments, to run it"
        return await turn.journal.ledger_put(key, loop, call, ToolResult(note))
    await turn.journal.dispatched(key, loop, call)
    return await turn.journal.ledger_put(key, loop, call, await turn.services.tools.run(call, key))


def _tool_results_message(calls: list[ToolCall], results: list[ToolResult]) -> dict[str, Any]:
    blocks = [
        {"type": "tool_result", "tool_use_id": call.id, "content": result.content, "is_error": result.is_error}
        for call, result in zip(calls, results, strict=True)
    ]
    return {"type": "user", "message": {"role": "user", "content": blocks}, "parent_tool_use_id": None}
