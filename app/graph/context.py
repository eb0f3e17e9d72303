"""What the nodes work with, handed in per run through LangGraph's runtime context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.context.engine_client import ContextEngineClient
from app.governance.gate import Governance
from app.providers.base import Provider
from app.runtime.journal import QuotaGate, TurnIdentity, TurnJournal, TurnRun, TurnServices
from app.tools.toolbox import ToolBox


@dataclass(slots=True)
class TurnContext:
    ident: TurnIdentity
    snapshot: dict[str, Any]
    journal: TurnJournal
    """Where the nodes record everything: events, messages, receipts, the ledger, approvals."""
    provider: Provider
    tools: ToolBox
    governance: Governance
    context_engine: ContextEngineClient | None = None
    context_token: Callable[[], str] | None = None
    quota: QuotaGate | None = None

    @classmethod
    def of(cls, run: TurnRun, services: TurnServices, journal: TurnJournal) -> TurnContext:
        return cls(
            ident=run.ident,
            snapshot=run.snapshot,
            journal=journal,
            provider=services.provider,
            tools=services.tools,
            governance=services.governance,
            context_engine=services.context_engine,
            context_token=services.context_token,
            quota=services.quota,
        )

    @property
    def model(self) -> dict[str, Any]:
        model: dict[str, Any] = self.snapshot["model"]
        return model
