from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.deps import SigningDep

router = APIRouter(tags=["auth"])


@router.get("/.well-known/jwks.json", operation_id="getJwks")
async def jwks(signing: SigningDep) -> dict[str, Any]:
    """Public keys of the per-turn tokens this service mints (all published keys, for rotation)."""
    return signing.jwks()
