"""The MCP server: `tools/list` lists the caller's agents, `tools/call` runs a turn of one.

Stateless streamable HTTP (any replica serves any request). The caller — its `Door` and, on
`/agents/{agent_id}/mcp`, the one agent — rides in the HTTP request's scope, put there by the router
after the bearer was verified.

A gated call is asked of the client in its own protocol when it can answer: a 2026-07-28 client that
declares elicitation gets an `input_required` result with one `elicitation/create` per pending
approval (keyed by approval id; `requestState` is the turn id) and its retry carries the decisions,
which resume the turn. Any other client gets a result saying the turn awaits approval, with the
approvals and their URLs; a later call on the same session continues that turn. A call whose client
goes away (cancellation is closing the stream) cancels the turn.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from app.agents.schemas import Agent
from app.approvals.schemas import Approval, BatchDecisionItem
from app.errors import AppError
from app.interop.door import Call, Door
from app.interop.mcp_server import tools
from app.models import ACTIVE_STATUSES
from app.turns.schemas import Turn

CALLER = "agent_runtime.mcp_caller"
FAILED = ("failed", "budget_exceeded", "loop_limit", "cancelled")
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "title": "Decision", "enum": ["approve", "deny"]},
        "reason": {"type": "string", "title": "Reason"},
        "arguments": {
            "type": "string",
            "title": "Edited arguments",
            "description": "A JSON object to run the call with instead (approve only); leave empty to keep them.",
        },
    },
    "required": ["decision"],
}


@dataclass(frozen=True, slots=True)
class Caller:
    door: Door
    base_url: str
    agent_id: uuid.UUID | None = None
    """Set on `/agents/{agent_id}/mcp`: the one agent this endpoint serves."""


def _caller(ctx: ServerRequestContext[Any]) -> Caller:
    caller = ctx.request.scope["state"][CALLER] if ctx.request is not None else None
    assert isinstance(caller, Caller)
    return caller


async def _catalog(caller: Caller) -> dict[str, Agent]:
    if caller.agent_id is not None:
        agent = await caller.door.agent(caller.agent_id)
        return {tools.base_name(agent.name): agent}
    return tools.tool_names(await caller.door.agents())


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    catalog = await _catalog(_caller(ctx))
    return types.ListToolsResult(tools=[tools.tool_of(name, agent) for name, agent in catalog.items()])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    caller = _caller(ctx)
    agent = (await _catalog(caller)).get(params.name)
    if agent is None:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
    try:
        arguments = tools.ToolArguments.parse(params.arguments)
    except ValueError as exc:
        raise MCPError(types.INVALID_PARAMS, f"Invalid arguments: {exc}") from None
    caps = ctx.session.client_capabilities
    asks = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and caps is not None and caps.elicitation is not None
    run = ToolRun(ctx, caller, agent, asks=asks)
    try:
        if params.request_state is not None:
            return await run.answered(_turn_id(params.request_state), params.input_responses or {})
        return await run.start(arguments)
    except AppError as exc:
        return _error(getattr(exc, "extra", {}).get("code") or exc.type_slug, exc.detail)


def _asked_again(turn: Turn, text: str) -> bool:
    return turn.resumed_by is not None and turn.input == text


def _turn_id(state: str) -> uuid.UUID:
    try:
        return uuid.UUID(state)
    except ValueError:
        raise MCPError(types.INVALID_PARAMS, "requestState does not name a turn") from None


class ToolRun:
    """One `tools/call`: the turn it starts or continues, followed to where it ends or waits."""

    def __init__(self, ctx: ServerRequestContext[Any], caller: Caller, agent: Agent, *, asks: bool) -> None:
        self.ctx = ctx
        self.door = caller.door
        self.base_url = caller.base_url
        self.agent = agent
        self.asks = asks
        self.progress = 0

    async def start(self, arguments: tools.ToolArguments) -> types.CallToolResult | types.InputRequiredResult:
        """A new turn, unless the call continues the session's latest one: while that one runs or waits for
        approvals, or when it is the same input again on a turn a decision resumed (the call that got
        "awaits approval" asked again after the decision, which the turn may have outrun)."""
        session_id = await self.door.session(self.agent.id, arguments.session, version=arguments.agent_version)
        latest = await self.door.latest(session_id)
        if latest is not None and (latest.status in ACTIVE_STATUSES or _asked_again(latest, arguments.input)):
            return await self.settle(await self.door.latest_run(latest.id))
        return await self.settle(await self.door.ask(session_id, arguments.input))

    async def answered(
        self, turn_id: uuid.UUID, responses: dict[str, types.InputResponse]
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The client's answers to our elicitations: each one a decision on the approval it is keyed by."""
        decisions = [d for key, response in responses.items() if (d := _decision(key, response)) is not None]
        call = await self.door.decide(turn_id, decisions) if decisions else None
        if call is None:
            return await self.waiting(await self.door.turn(turn_id))
        return await self.settle(call)

    async def settle(self, call: Call) -> types.CallToolResult | types.InputRequiredResult:
        await self.follow(call)
        turn = await self.door.turn(call.turn_id)
        if turn.status == "interrupted":
            return await self.waiting(turn)
        return self.final(turn)

    async def follow(self, call: Call) -> None:
        """Pass the run's text deltas on as progress; a call that is cancelled cancels the turn."""
        try:
            async with contextlib.aclosing(call.events) as events:
                async for event in events:
                    if event["type"] == "message.delta" and event.get("text"):
                        self.progress += 1
                        await self.ctx.session.report_progress(self.progress, None, event["text"])
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), contextlib.suppress(AppError):
                await self.door.cancel(call.turn_id)
            raise

    async def waiting(self, turn: Turn) -> types.CallToolResult | types.InputRequiredResult:
        pending = await self.door.pending(turn.id) if turn.status == "interrupted" else []
        if not pending:
            return self.final(turn)
        if self.asks:
            requests: types.InputRequests = {str(a.id): self._elicitation(a) for a in pending}
            return types.InputRequiredResult(input_requests=requests, request_state=str(turn.id))
        approvals = [
            {"approval_id": str(a.id), "name": a.name, "arguments": a.arguments, "reason": a.reason,
             "url": f"{self.base_url}/approvals/{a.id}"}
            for a in pending
        ]  # fmt: skip
        lines = [f"- {a['name']} {orjson.dumps(a['arguments']).decode()}: POST {a['url']}" for a in approvals]
        text = "\n".join(
            [f"The turn awaits approval of {len(pending)} tool call(s):", *lines,
             "Decide each one, then call this tool again with the same session to continue."]
        )  # fmt: skip
        structured = {**_summary(turn), "approvals": approvals}
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)

    def _elicitation(self, approval: Approval) -> types.ElicitRequest:
        arguments = orjson.dumps(approval.arguments).decode()
        why = f" ({approval.reason})" if approval.reason else ""
        message = f"Agent {self.agent.name!r} wants to call {approval.name} with {arguments}{why}. Approve?"
        return types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=DECISION_SCHEMA)
        )

    def final(self, turn: Turn) -> types.CallToolResult:
        structured = _summary(turn)
        if turn.status in FAILED:
            code = turn.error.code if turn.error else turn.status
            message = turn.error.message if turn.error else f"the turn ended {turn.status}"
            text = f"{code}: {message}" + (f"\n\n{turn.final_output}" if turn.final_output else "")
            structured["error"] = {"code": code, "message": message}
            return types.CallToolResult(
                content=[types.TextContent(text=text)], structured_content=structured, is_error=True
            )
        output = _output(turn.final_output) if tools.output_schema_of(self.agent) is not None else None
        if output is not None:
            structured["output"] = output
        return types.CallToolResult(
            content=[types.TextContent(text=turn.final_output or "")], structured_content=structured
        )


def _summary(turn: Turn) -> dict[str, Any]:
    return {"turn_id": str(turn.id), "session_id": str(turn.session_id), "status": turn.status,
            "usage": turn.usage.model_dump()}  # fmt: skip


def _output(text: str | None) -> Any:
    with contextlib.suppress(orjson.JSONDecodeError, TypeError):
        return orjson.loads(text or "")
    return None


def _error(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=f"{code}: {message}")], is_error=True)


def _decision(key: str, response: types.InputResponse) -> BatchDecisionItem | None:
    """An elicitation's answer as a decision: accept carries it, decline denies, cancel leaves it pending."""
    if not isinstance(response, types.ElicitResult) or response.action == "cancel":
        return None
    try:
        approval_id = uuid.UUID(key)
    except ValueError:
        raise MCPError(types.INVALID_PARAMS, f"inputResponses key {key!r} is not an approval id") from None
    if response.action == "decline":
        return BatchDecisionItem(approval_id=approval_id, decision="deny", reason="declined by the MCP client")
    content = response.content or {}
    decision = content.get("decision")
    if decision not in ("approve", "deny"):
        raise MCPError(types.INVALID_PARAMS, "an accepted elicitation needs decision approve or deny")
    reason = content.get("reason")
    edited = content.get("arguments")
    arguments = None
    if decision == "approve" and isinstance(edited, str) and edited.strip():
        try:
            arguments = orjson.loads(edited)
        except orjson.JSONDecodeError:
            raise MCPError(types.INVALID_PARAMS, "edited arguments must be a JSON object") from None
        if not isinstance(arguments, dict):
            raise MCPError(types.INVALID_PARAMS, "edited arguments must be a JSON object")
    return BatchDecisionItem(
        approval_id=approval_id, decision=decision, reason=reason if isinstance(reason, str) else None,
        arguments=arguments,
    )  # fmt: skip


class McpServer:
    """The service's one MCP server and its stateless session manager; `running()` belongs in the lifespan."""

    def __init__(self, version: str) -> None:
        self.server: Server[Any] = Server(
            "agent-runtime", version=version, on_list_tools=list_tools, on_call_tool=call_tool
        )
        self.manager = StreamableHTTPSessionManager(self.server, stateless=True)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def handle(self, scope: Any, receive: Any, send: Any, caller: Caller) -> None:
        scope.setdefault("state", {})[CALLER] = caller
        await self.manager.handle_request(scope, receive, send)
