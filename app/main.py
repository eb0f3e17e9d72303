"""App factory and lifespan: every long-lived thing is built and closed here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app.agents.router import router as agents_router
from app.auth.secret import load_or_create_secret
from app.auth.verify import JwksCache, TokenVerifier
from app.container import Container
from app.core.body_limit import BodySizeLimit
from app.core.db import create_engine, create_session_factory, is_sqlite
from app.core.migrate import upgrade_head
from app.core.problems import install_problem_handlers
from app.health import router as health_router
from app.sessions.router import router as sessions_router
from app.settings import Settings, get_settings


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
    if is_sqlite(url):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(upgrade_head, url)
    engine = create_engine(url, pool_size=settings.db.pool_size, max_overflow=settings.db.max_overflow)
    http = httpx.AsyncClient(limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))
    container = Container(
        settings=settings,
        engine=engine,
        session_factory=create_session_factory(engine),
        verifier=build_verifier(settings, http),
        http=http,
    )
    app.state.container = container
    try:
        yield
    finally:
        await http.aclose()
        await engine.dispose()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        title="agent-runtime",
        version="0.1.0",
        description="Governed LLM agents over HTTP and Server-Sent Events.",
        lifespan=_lifespan,
    )
    app.state.settings = settings
    install_problem_handlers(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.http.max_body_bytes)
    if settings.http.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.http.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["Location"],
        )
    for router in (health_router, agents_router, sessions_router):
        app.include_router(router)
    return app
