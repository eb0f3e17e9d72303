"""The application's long-lived collaborators, built once by the lifespan and read by dependencies.

Built only when every part exists, and frozen: a dependency never meets a half-built state, and
nothing needs an `Optional` checked at each use (except `claude_sdk`, an optional install).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.auth.signing import SigningKeys
from app.auth.verify import TokenVerifier
from app.core.sealing import SecretSealer
from app.core.sql import Sql
from app.runtime.engine import TurnEngine
from app.runtime.manager import TurnManager
from app.secrets.box import SecretBox
from app.settings import Settings

if TYPE_CHECKING:
    from app.claude_sdk.runtime import ClaudeSdkRuntime


@dataclass(frozen=True, slots=True)
class AppState:
    settings: Settings
    engine: AsyncEngine
    """The SQLAlchemy engine of the REST resources (ORM units of work)."""
    session_factory: async_sessionmaker[AsyncSession]
    verifier: TokenVerifier
    http: httpx.AsyncClient
    sql: Sql
    """Hot-path statements (app/core/sql.py)."""
    signing: SigningKeys
    """The keys of the per-turn tokens this service mints."""
    turns: TurnManager
    """The live runs of this process: started, drained and stopped by the lifespan (app/runtime/manager.py)."""
    turn_engine: TurnEngine
    """The turn engine's front door, the one the services call (app/runtime/engine.py)."""
    webhook_secrets: SecretSealer
    """Seals and opens the webhooks' signing secrets (app/webhooks/secrets.py)."""
    secret_box: SecretBox
    """The keys that seal stored provider keys (SECRETS_KEY_FILE)."""
    claude_sdk: ClaudeSdkRuntime | None
    """The `claude_sdk` runtime and its pool of Claude Code processes; None without the `claude` extra
    (claude-agent-sdk not installed, app/claude_sdk/extra.py)."""


Container = AppState
"""The former name, kept so code written against it keeps working."""
