"""MCP gateway client: the official `mcp` client over streamable HTTP (DESIGN.md "External services").

Every operation opens a short MCP client on one long-lived `httpx2.AsyncClient`, so TCP connections
are pooled for the service's lifetime. Per-call headers (the turn's bearer token, and
`X-Idempotency-Key` on `tools/call`) travel in a context variable that an httpx2 request hook reads:
the `mcp` transport runs its HTTP requests in tasks that inherit the calling task's context, so
concurrent calls each send their own headers.

The protocol era is negotiated once per endpoint (`server/discover`, falling back to the
`initialize` handshake) and reused, so a 2026-07-28 gateway costs one POST per operation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, DiscoverResult, TextContent, Tool

from app.providers.base import ToolSpec
from app.tools.base import ToolResult

IDEMPOTENCY_HEADER = "X-Idempotency-Key"
MAX_LIST_PAGES = 50


class McpGatewayUnavailable(Exception):
    """Tool discovery failed: the gateway is unreachable, refused us, or answered with an error."""


@dataclass(slots=True)
class _Exchange:
    """Headers for the HTTP requests of one operation, and what went wrong on the wire."""

    token: str = field(repr=False)
    idempotency_key: str | None = None
    http_status: int | None = None


@dataclass(frozen=True, slots=True)
class _Era:
    mode: str
    discover: DiscoverResult | None

    @classmethod
    def of(cls, client: Client) -> _Era:
        discover = client.session.discover_result
        return cls(mode=client.protocol_version if discover else "legacy", discover=discover)


_exchange: ContextVar[_Exchange | None] = ContextVar("mcp_gateway_exchange", default=None)


def _is_tools_call(request: httpx2.Request) -> bool:
    if request.method != "POST":
        return False
    try:
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return False
    return isinstance(body, dict) and body.get("method") == "tools/call"


async def _stamp_request(request: httpx2.Request) -> None:
    exchange = _exchange.get()
    if exchange is None:
        return
    request.headers["Authorization"] = f"Bearer {exchange.token}"
    if exchange.idempotency_key is not None and _is_tools_call(request):
        request.headers[IDEMPOTENCY_HEADER] = exchange.idempotency_key


async def _note_response(response: httpx2.Response) -> None:
    exchange = _exchange.get()
    if exchange is not None and response.request.method == "POST" and response.status_code >= 400:
        exchange.http_status = response.status_code


class McpGatewayClient:
    """`tools/list` and `tools/call` against `{base_url}/mcp/team/{team_unit}`; close with `aclose()`."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._eras: dict[str, _Era] = {}
        self._http = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout),
            event_hooks={"request": [_stamp_request], "response": [_note_response]},
        )

    async def list_tools(self, token: str, team_unit: str) -> list[ToolSpec]:
        exchange = _Exchange(token=token)
        try:
            async with self._connect(exchange, team_unit) as client:
                tools = await _all_tools(client)
        except Exception as exc:  # any failure of discovery fails the turn; the cause is in the message
            raise McpGatewayUnavailable(self._describe(exc, exchange)) from None
        return [ToolSpec(tool.name, tool.description or "", tool.input_schema) for tool in tools]

    async def call_tool(
        self,
        token: str,
        team_unit: str,
        name: str,
        arguments: dict[str, Any],
        idempotency_key: str,
    ) -> ToolResult:
        """Never raises for gateway trouble: the model sees an error result it can react to."""
        exchange = _Exchange(token=token, idempotency_key=idempotency_key)
        try:
            async with self._connect(exchange, team_unit) as client:
                result = await client.call_tool(name, arguments)
        except Exception as exc:  # JSON-RPC errors, timeouts and transport failures alike
            return ToolResult(self._describe(exc, exchange), is_error=True)
        return ToolResult(_render(result), is_error=result.is_error)

    async def aclose(self) -> None:
        await self._http.aclose()

    @asynccontextmanager
    async def _connect(self, exchange: _Exchange, team_unit: str) -> AsyncIterator[Client]:
        url = f"{self._base_url}/mcp/team/{quote(team_unit, safe='')}"
        era = self._eras.get(url)
        reset = _exchange.set(exchange)
        try:
            async with self._client(url, era) as client:
                if era is None:
                    self._eras[url] = _Era.of(client)
                yield client
        except Exception:
            self._eras.pop(url, None)
            raise
        finally:
            _exchange.reset(reset)

    def _client(self, url: str, era: _Era | None) -> Client:
        return Client(
            streamable_http_client(url, http_client=self._http),
            mode=era.mode if era else "auto",
            prior_discover=era.discover if era else None,
            read_timeout_seconds=self._timeout,
            cache=None,
        )

    def _describe(self, exc: BaseException, exchange: _Exchange) -> str:
        cause = _innermost(exc)
        if isinstance(cause, McpGatewayUnavailable):
            text = str(cause)
        elif isinstance(cause, MCPError):
            text = f"MCP error {cause.code}: {cause.message}"
        elif isinstance(cause, TimeoutError | httpx2.TimeoutException):
            text = f"MCP gateway timed out after {self._timeout:g}s"
        elif isinstance(cause, httpx2.TransportError | OSError):
            text = f"MCP gateway unreachable ({type(cause).__name__})"
        else:
            text = f"MCP gateway call failed ({type(cause).__name__})"
        if exchange.http_status is not None:
            text += f" (gateway answered HTTP {exchange.http_status})"
        return text.replace(exchange.token, "[redacted]") if exchange.token else text


def filter_tools(tools: list[ToolSpec], servers: list[str]) -> list[ToolSpec]:
    """The tools of the agent's `mcp:SERVER` entries (server ids given with or without `mcp:`)."""
    prefixes = tuple(f"{server.removeprefix('mcp:')}__" for server in servers)
    return [tool for tool in tools if prefixes and tool.name.startswith(prefixes)]


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise McpGatewayUnavailable(f"tools/list did not end after {MAX_LIST_PAGES} pages")


def _innermost(exc: BaseException) -> BaseException:
    """The failure itself, out of the task-group wrappers the `mcp` transport adds on the way out."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _render(result: CallToolResult) -> str:
    parts = [
        block.text
        if isinstance(block, TextContent)
        else json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True))
        for block in result.content
    ]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content)
    return "\n".join(parts)
