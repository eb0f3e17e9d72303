"""What the nodes work with, handed in per run through LangGraph's runtime context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.context.engine_client import ContextEngineClient
from app.governance.gate import Governance
from app.providers.base import Provider
from app.runtime.store import TurnIdentity, TurnStore
from app.runtime.stream import TurnStream
from app.tools.toolbox import ToolBox

Emit = Callable[[str, dict[str, Any]], int]


@dataclass(slots=True)
class TurnContext:
    ident: TurnIdentity
    snapshot: dict[str, Any]
    emit: Emit
    journal: TurnStream
    """The turn's batched writer: events, messages, usage and receipts, stored together."""
    store: TurnStore
    provider: Provider
    tools: ToolBox
    governance: Governance
    owner_sub: str
    context_engine: ContextEngineClient | None = None
    context_token: Callable[[], str] | None = None

    @property
    def model(self) -> dict[str, Any]:
        model: dict[str, Any] = self.snapshot["model"]
        return model
