from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.deps import ContainerDep

router = APIRouter(tags=["auth"])


@router.get("/.well-known/jwks.json", operation_id="getJwks")
async def jwks(container: ContainerDep) -> dict[str, Any]:
    """Public keys of the per-turn tokens this service mints (all published keys, for rotation)."""
    return container.signing.jwks() if container.signing else {"keys": []}
