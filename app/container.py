"""Long-lived collaborators built by the lifespan and handed to routers through dependencies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.auth.signing import SigningKeys
from app.auth.verify import TokenVerifier
from app.core.sql import Sql
from app.settings import Settings

if TYPE_CHECKING:
    from app.runtime.manager import TurnManager


@dataclass
class Container:
    settings: Settings
    engine: AsyncEngine
    session_factory: async_sessionmaker[AsyncSession]
    verifier: TokenVerifier
    http: httpx.AsyncClient
    sql: Sql | None = field(default=None)
    """Hot-path statements (app/core/sql.py); set by the lifespan."""
    turns: TurnManager | None = field(default=None)
    signing: SigningKeys | None = field(default=None)
