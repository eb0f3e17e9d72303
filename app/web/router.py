"""`GET /` (the chat page), its static files, and the one-click local sign-in."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel

from app.core.problems import problem_response, problem_responses
from app.deps import ContainerDep
from app.settings import Settings
from app.web.local_sign_in import LOCAL_TOKEN_TTL_SECONDS, local_token, refusal

STATIC_DIR = Path(__file__).parent / "static"
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
router = APIRouter(tags=["web"])


class SignInOptions(BaseModel):
    local: bool
    reason: str | None = None


class LocalToken(BaseModel):
    token: str
    expires_in: int
    tenant_id: str
    sub: str


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=PAGE_HEADERS)


@router.get("/web/evals", include_in_schema=False)
async def evals_page() -> FileResponse:
    """An eval's figures per check beside its baseline's, and its items (app/web/static/evals.js)."""
    return FileResponse(STATIC_DIR / "evals.html", media_type="text/html", headers=PAGE_HEADERS)


def _refusal(request: Request, settings: Settings) -> str | None:
    server = request.scope.get("server")
    return refusal(
        settings,
        peer=request.client.host if request.client else None,
        headers=request.headers,
        port=server[1] if server else None,
    )


@router.get("/web/sign-in", operation_id="getSignInOptions", response_model=SignInOptions)
async def sign_in_options(request: Request, container: ContainerDep) -> SignInOptions:
    """Whether this request may use the one-click local sign-in (and if not, why)."""
    reason = _refusal(request, container.settings)
    return SignInOptions(local=reason is None, reason=reason)


@router.post(
    "/web/local-token", operation_id="createLocalToken", response_model=LocalToken, responses=problem_responses(403)
)
async def create_local_token(request: Request, container: ContainerDep) -> JSONResponse:
    """A token for tenant `local` (role admin), only from 127.0.0.1 when the service generated its own secret."""
    settings = container.settings
    reason = _refusal(request, settings)
    if reason is not None:
        return problem_response(request, status=403, title="Forbidden", slug="forbidden", detail=reason)
    signed = await asyncio.to_thread(local_token, settings)  # reads the secret file
    token = LocalToken(token=signed, expires_in=LOCAL_TOKEN_TTL_SECONDS, tenant_id="local", sub="local")
    return JSONResponse(token.model_dump(), headers={"Cache-Control": "no-store"})
