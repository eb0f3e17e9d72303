"""`GET /` (the chat page), its static files, and the one-click local sign-in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from app.auth.verify import MAX_IDENTITY_CHARS
from app.core.problems import problem_response, problem_responses
from app.deps import ContainerDep
from app.settings import ModelPrice, Settings
from app.web.local_sign_in import LOCAL_SUB, LOCAL_TENANT, LOCAL_TOKEN_TTL_SECONDS, local_token, refusal

STATIC_DIR = Path(__file__).parent / "static"
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
PRICE_UNIT = 1_000_000
Identity = Annotated[str, Field(min_length=1, max_length=MAX_IDENTITY_CHARS, pattern=r"^[A-Za-z0-9._@:-]+$")]
router = APIRouter(tags=["web"])


class SignInOptions(BaseModel):
    local: bool
    reason: str | None = None


class LocalTokenRequest(BaseModel):
    """Whom the local token is for: any tenant and user of this service (the README's curl uses `acme`)."""

    model_config = ConfigDict(extra="forbid")
    tenant_id: Identity = LOCAL_TENANT
    sub: Identity = LOCAL_SUB


class ModelPrices(BaseModel):
    currency: Literal["USD"] = "USD"
    per_tokens: int = PRICE_UNIT
    models: dict[str, ModelPrice]


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
    "/web/local-token",
    operation_id="createLocalToken",
    response_model=LocalToken,
    responses=problem_responses(403, 422),
)
async def create_local_token(
    request: Request, container: ContainerDep, body: LocalTokenRequest | None = None
) -> JSONResponse:
    """A token for the tenant and user asked (default `local`, role admin), only from 127.0.0.1 when the
    service generated its own secret."""
    body = body or LocalTokenRequest()
    settings = container.settings
    reason = _refusal(request, settings)
    if reason is not None:
        return problem_response(request, status=403, title="Forbidden", slug="forbidden", detail=reason)
    signed = await asyncio.to_thread(local_token, settings, tenant_id=body.tenant_id, sub=body.sub)  # reads a file
    token = LocalToken(token=signed, expires_in=LOCAL_TOKEN_TTL_SECONDS, tenant_id=body.tenant_id, sub=body.sub)
    return JSONResponse(token.model_dump(), headers={"Cache-Control": "no-store"})


@router.get("/web/prices", operation_id="getModelPrices", response_model=ModelPrices)
async def model_prices(container: ContainerDep) -> ModelPrices:
    """The price table the page shows each turn's cost from (`MODEL_PRICES` over the built-in one)."""
    return ModelPrices(models=container.settings.pricing.table())
