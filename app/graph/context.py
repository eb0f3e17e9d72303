"""What the nodes work with, handed in per run through LangGraph's runtime context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.agents.config import AgentConfig
from app.context.engine_client import ContextEngineClient
from app.governance.gate import Governance
from app.providers.base import Provider
from app.runtime.port.journal import Continued, FileReader, QuotaGate, TurnIdentity, TurnJournal, TurnRun, TurnServices
from app.tools.recorded import agent_config_of
from app.tools.toolbox import ToolBox


@dataclass(slots=True)
class TurnContext:
    ident: TurnIdentity
    config: AgentConfig
    """The pinned snapshot, validated once per run, but for its `policies` (left empty here): the
    policy gate judges the stored rules itself and fails closed on one it cannot read, so a rule
    stored under older rules denies instead of crashing the turn."""
    model: dict[str, Any]
    """The snapshot's `model` block as stored: what providers read (`ModelRequest.model`)."""
    journal: TurnJournal
    """Where the nodes record everything: events, messages, receipts, the ledger, approvals."""
    provider: Provider
    tools: ToolBox
    governance: Governance
    context_engine: ContextEngineClient | None = None
    context_token: Callable[[], str] | None = None
    quota: QuotaGate | None = None
    continued: Continued | None = None
    """Set when the run continues a turn whose run was lost: tool calls consult the ledger's dispatched rows."""
    restored: bool = False
    """The run picks up stored work (a continuation, or a resume after approvals): its calls may already
    be in the ledger. A fresh run's calls cannot be (their ids are this run's own, and the key names
    the turn), so it skips the ledger read."""
    output_schema: dict[str, Any] | None = None
    files: FileReader | None = None

    @classmethod
    def of(cls, run: TurnRun, services: TurnServices, journal: TurnJournal) -> TurnContext:
        return cls(
            ident=run.ident,
            config=AgentConfig.model_validate({**agent_config_of(run.snapshot), "policies": []}),
            model=run.snapshot["model"],
            journal=journal,
            provider=services.provider,
            tools=services.tools,
            governance=services.governance,
            context_engine=services.context_engine,
            context_token=services.context_token,
            quota=services.quota,
            continued=run.continued,
            restored=run.continued is not None or run.resumed_by is not None,
            output_schema=run.output_schema,
            files=services.files,
        )
