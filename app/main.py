"""App factory and lifespan: every long-lived thing is built and closed here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from app.adapters.router import router as adapters_router
from app.agents.config import CONFIG_DOCUMENT_MARK
from app.agents.router import router as agents_router
from app.approvals.router import router as approvals_router
from app.auth.secret import load_or_create_secret
from app.auth.signing import SigningKeys
from app.auth.verify import JwksCache, TokenVerifier
from app.autonomy.runtime import AutonomousRuntime
from app.branching.router import router as branching_router
from app.claude_sdk.extra import NOT_INSTALLED, sdk_missing
from app.claude_sdk.pool import ClientPool
from app.container import AppState
from app.context.engine_client import ContextEngineClient
from app.core import tracing
from app.core.access import RequestObserver
from app.core.body_limit import MULTIPART_ENVELOPE_BYTES, BodySizeLimit
from app.core.db import create_engine, create_session_factory, is_sqlite
from app.core.db_spans import instrument_engine
from app.core.json_guard import JsonBodyGuard
from app.core.logs import configure_logging
from app.core.migrate import upgrade_head, warn_if_unmigrated
from app.core.problems import install_problem_handlers
from app.core.sql import Sql, open_sql
from app.core.sse import SSE_MEDIA_TYPE
from app.credentials.resolver import CredentialResolver, EnvironmentKey
from app.credentials.router import router as credentials_router
from app.evals.router import router as evals_router
from app.evals.worker import EvalWorker
from app.files.attachments import FileAttachments
from app.files.router import router as files_router
from app.files.store import FileContents, FileStore
from app.graph.runtime import LangGraphRuntime
from app.health import router as health_router
from app.interop.a2a_server.push_delivery import PushTasks
from app.interop.a2a_server.router import router as a2a_router
from app.interop.mcp_server.router import router as mcp_router
from app.interop.mcp_server.server import McpServer
from app.jwks import router as jwks_router
from app.memory.router import router as memory_router
from app.memory.tools import MemoryTools
from app.openapi_links import add_links
from app.policies.router import router as policies_router
from app.providers.clients import ClientOptions, ProviderClients
from app.providers.registry import ProviderRegistry
from app.runtime.engine import TurnEngine
from app.runtime.manager import TurnManager
from app.runtime.port.events import FRAME_SCHEMA_NAME, GENERIC_FRAME_SCHEMA, GENERIC_FRAME_SCHEMA_NAME, event_schemas
from app.runtime.port.journal import TurnRuntime
from app.runtime.services import Outbound, RunServices, UnavailableRuntime
from app.schedules.router import router as schedules_router
from app.schedules.worker import ScheduleWorker
from app.secrets.box import SecretBox
from app.secrets.keyring import SecretsKeyring
from app.sessions.expiry import IdleTtl
from app.sessions.router import router as sessions_router
from app.sessions.service import SessionExpiry
from app.sessions.sweeper import SweepLimits, session_sweeper
from app.settings import Settings, get_settings
from app.tools.mcp_gateway import McpGatewayClient
from app.turns.router import router as turns_router
from app.usage.router import router as usage_router
from app.web.docs import router as docs_router
from app.web.router import STATIC_DIR
from app.web.router import router as web_router
from app.webhooks.router import router as webhooks_router
from app.webhooks.secrets import WebhookSecrets
from app.webhooks.worker import DeliveryWorker, WorkerConfig

if TYPE_CHECKING:
    from app.claude_sdk.runtime import ClaudeSdkRuntime

log = logging.getLogger(__name__)


def build_verifier(settings: Settings, http: httpx.AsyncClient) -> TokenVerifier:
    auth = settings.auth
    if auth.jwks_url:
        jwks = JwksCache(auth.jwks_url, http, ttl=auth.jwks_cache_seconds)
        return TokenVerifier(jwks=jwks, issuer=auth.issuer, audience=auth.audience, leeway=auth.leeway_seconds)
    secret = auth.jwt_secret or load_or_create_secret(settings.data_dir)
    return TokenVerifier(secret=secret, issuer=auth.issuer, audience=auth.audience, leeway=auth.leeway_seconds)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    url = settings.database_url
    observability = settings.observability
    if observability.otel_exporter_otlp_endpoint:
        tracing.configure_tracing(
            service_name=observability.otel_service_name, endpoint=observability.otel_exporter_otlp_endpoint
        )
    if is_sqlite(url):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(upgrade_head, url)
    engine = create_engine(
        url,
        pool_size=settings.db.api_pool_size,
        max_overflow=settings.db.max_overflow,
        pool_timeout=settings.db.pool_timeout_seconds,
    )
    if tracing.enabled():
        instrument_engine(engine)
    if not is_sqlite(url):
        await warn_if_unmigrated(engine)
    http = httpx.AsyncClient(limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))
    keyring = await asyncio.to_thread(SecretsKeyring.load_or_create, settings.secrets.key_file, settings.data_dir)
    secret_box = SecretBox(keyring)
    provider_clients = _provider_clients(settings)
    signing = await asyncio.to_thread(
        SigningKeys.load_or_create,
        settings.signing.key_file,
        settings.data_dir,
        settings.signing.extra_public_key_files,
    )
    outbound = Outbound(
        signing=signing,
        issuer=settings.signing.issuer,
        token_ttl=settings.signing.token_ttl_seconds,
        context_engine=_context_engine(settings, http),
        gateway=_gateway(settings),
    )
    sql = await open_sql(engine, max_size=settings.db.pool_size, acquire_timeout=settings.db.pool_timeout_seconds)
    session_factory = create_session_factory(engine)
    resolver = _resolver(settings, sql, secret_box)
    claude_sdk = _claude_sdk(settings, resolver)
    services = RunServices(
        sql,
        _runtimes(LangGraphRuntime(settings.graph_driver), claude_sdk),
        ProviderRegistry.default(provider_clients, resolver),
        outbound,
        memory_tools=lambda tenant_id, user_sub, agent_id: MemoryTools(
            session_factory, tenant_id=tenant_id, user_sub=user_sub, agent_id=agent_id
        ),
        files=FileContents(sql, FileStore(settings.files.store_dir)),
        output_holdback=settings.guardrails.output_guard_holdback_chars,
    )
    turns = TurnManager(engine=engine, sql=sql, services=services, listen=not is_sqlite(url))
    turn_engine = TurnEngine(
        turns,
        session_factory,
        autonomy_enabled=settings.autonomy_enabled,
        session_runtimes={"claude_sdk": claude_sdk} if claude_sdk is not None else {},
        expiry=SessionExpiry(session_factory, IdleTtl(settings.lifecycle.session_idle_ttl_seconds)),
        attachments=FileAttachments(session_factory),
    )
    webhook_secrets = await asyncio.to_thread(
        WebhookSecrets.load_or_create, settings.webhooks.secrets_key_file, settings.data_dir
    )
    app.state.container = AppState(
        settings=settings,
        engine=engine,
        session_factory=session_factory,
        verifier=build_verifier(settings, http),
        http=http,
        sql=sql,
        signing=signing,
        turns=turns,
        turn_engine=turn_engine,
        webhook_secrets=webhook_secrets,
        secret_box=secret_box,
        claude_sdk=claude_sdk,
    )
    await turns.start()
    if claude_sdk is not None:
        claude_sdk.pool.start_reaper()
    deliveries = DeliveryWorker(
        engine, http, webhook_secrets, WorkerConfig.of(settings.webhooks), push=PushTasks(app.state.container)
    )
    if settings.webhooks.enabled:
        deliveries.start()
    sweeper = session_sweeper(SweepLimits.of(settings.lifecycle), engine, turns, FileStore(settings.files.store_dir))
    sweeper.start(settings.lifecycle.session_sweep_seconds)
    schedules = ScheduleWorker(app.state.container, poll_seconds=settings.schedule.poll_seconds)
    app.state.schedules = schedules
    schedules.start()
    evals = EvalWorker(app.state.container, poll_seconds=settings.evals.poll_seconds)
    app.state.evals = evals
    evals.start()
    try:
        async with app.state.mcp_server.running():
            yield
    finally:
        await evals.stop()
        await schedules.stop()
        await sweeper.stop()
        await deliveries.close()
        await turns.shutdown()
        if claude_sdk is not None:
            await claude_sdk.pool.close_all()
        if outbound.gateway is not None:
            await outbound.gateway.aclose()
        await provider_clients.aclose()
        await http.aclose()
        await sql.close()
        await engine.dispose()
        if observability.otel_exporter_otlp_endpoint:
            tracing.shutdown_tracing()


def _provider_clients(settings: Settings) -> ProviderClients:
    return ProviderClients(
        {
            "anthropic": ClientOptions(settings.anthropic.timeout_seconds, settings.anthropic.max_retries),
            "openai": ClientOptions(settings.openai.timeout_seconds, settings.openai.max_retries),
            "gemini": ClientOptions(settings.gemini.timeout_seconds, settings.gemini.max_retries),
        },
        max_connections=settings.providers.max_connections,
    )


def _resolver(settings: Settings, sql: Sql, box: SecretBox) -> CredentialResolver:
    environment = {
        "anthropic": EnvironmentKey(settings.anthropic.api_key, settings.anthropic.base_url),
        "openai": EnvironmentKey(settings.openai.api_key, settings.openai.base_url),
        "gemini": EnvironmentKey(settings.gemini.api_key, settings.gemini.base_url),
    }
    return CredentialResolver(sql, box, environment, settings.providers.allowed_hosts)


def _runtimes(langgraph: LangGraphRuntime, claude_sdk: ClaudeSdkRuntime | None) -> dict[str, TurnRuntime]:
    """The runtimes by name; `NAME+autonomous` runs PLAN / PURSUE over runtime NAME (app/autonomy).
    Without the `claude` extra, `claude_sdk` turns fail at once and say how to install it."""
    runtimes: dict[str, TurnRuntime] = {"langgraph": langgraph, "langgraph+autonomous": AutonomousRuntime(langgraph)}
    if claude_sdk is None:
        missing = UnavailableRuntime("claude_sdk", NOT_INSTALLED)
        return runtimes | {"claude_sdk": missing, "claude_sdk+autonomous": missing}
    return runtimes | {"claude_sdk": claude_sdk, "claude_sdk+autonomous": AutonomousRuntime(claude_sdk)}


def _claude_sdk(settings: Settings, endpoints: CredentialResolver) -> ClaudeSdkRuntime | None:
    """None without the `claude` extra (claude-agent-sdk): the service runs its other runtimes."""
    try:
        from app.claude_sdk.runtime import ClaudeSdkRuntime
    except ImportError as exc:
        if not sdk_missing(exc):
            raise
        log.info(NOT_INSTALLED)
        return None
    config = settings.claude_sdk
    return ClaudeSdkRuntime(
        pool=ClientPool(max_sessions=config.max_sessions, idle_seconds=config.idle_seconds),
        data_dir=settings.data_dir,
        endpoints=endpoints,
        cli_path=config.cli_path,
    )


def _context_engine(settings: Settings, http: httpx.AsyncClient) -> ContextEngineClient | None:
    url = settings.context_engine.url
    return ContextEngineClient(http, base_url=url, timeout=settings.context_engine.timeout_seconds) if url else None


def _gateway(settings: Settings) -> McpGatewayClient | None:
    url = settings.mcp_gateway.url
    return McpGatewayClient(url, settings.mcp_gateway.timeout_seconds) if url else None


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        title="agent-runtime",
        version="0.1.0",
        description="Governed LLM agents over HTTP and Server-Sent Events.",
        lifespan=_lifespan,
        docs_url=None,  # served from the vendored assets (app/web/docs.py): no CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.mcp_server = McpServer(app.version)
    configure_logging(settings.observability.log_format, settings.observability.log_level)
    install_problem_handlers(app)
    app.add_middleware(JsonBodyGuard)  # inside BodySizeLimit: it reads only bodies already bounded
    uploads = {"/files": settings.files.max_bytes + MULTIPART_ENVELOPE_BYTES}
    app.add_middleware(BodySizeLimit, max_bytes=settings.http.max_body_bytes, per_path=uploads)
    if settings.http.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.http.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["Location", "X-Request-ID"],
        )
    app.add_middleware(RequestObserver)  # outermost: it sees every answer, the 413s and CORS preflights too
    for router in (
        health_router,
        jwks_router,
        agents_router,
        sessions_router,
        turns_router,
        branching_router,
        approvals_router,
        policies_router,
        usage_router,
        credentials_router,
        memory_router,
        schedules_router,
        evals_router,
        webhooks_router,
        files_router,
        web_router,
        docs_router,
        adapters_router,
        mcp_router,
        a2a_router,
    ):
        app.include_router(router)
    app.mount("/web/static", StaticFiles(directory=STATIC_DIR), name="web-static")
    _publish_event_schemas(app)
    return app


def _publish_event_schemas(app: FastAPI) -> None:
    """Put the SSE event union under components, so generated clients get typed events.

    A stream's `schema` describes one event as OpenAPI 3.1 readers parse it (`{id, event, data}`);
    the union is the schema of its `data`, a JSON text (`contentMediaType`/`contentSchema`)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.setdefault("components", {}).setdefault("schemas", {}).update(event_schemas())
            schema["components"]["schemas"][GENERIC_FRAME_SCHEMA_NAME] = GENERIC_FRAME_SCHEMA
            add_links(schema)
            _refer_config_documents(schema["components"]["schemas"])
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    stream = operation.get("responses", {}).get("200", {}).get("content", {}).get(SSE_MEDIA_TYPE)
                    if stream is not None:
                        stream["schema"] = _frame_schema(stream.get("schema") or {})
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


EVENT_UNION_REF = "#/components/schemas/TurnEvent"
TURN_FRAME_REF = f"#/components/schemas/{FRAME_SCHEMA_NAME}"


def _frame_schema(declared: dict[str, Any]) -> dict[str, Any]:
    """A turn's stream: its typed frame. Any other stream (AG-UI, AI SDK): a frame whose `data` is text."""
    if declared.get("$ref") in (EVENT_UNION_REF, TURN_FRAME_REF):
        return {"$ref": TURN_FRAME_REF}
    return {"$ref": f"#/components/schemas/{GENERIC_FRAME_SCHEMA_NAME}"}


def _refer_config_documents(schemas: dict[str, Any]) -> None:
    """Stored configs are documented as the `AgentConfig` schema itself, never as an anonymous object."""
    for component in schemas.values():
        for name, prop in component.get("properties", {}).items():
            if isinstance(prop, dict) and prop.get(CONFIG_DOCUMENT_MARK):
                component["properties"][name] = {"$ref": "#/components/schemas/AgentConfig"}
