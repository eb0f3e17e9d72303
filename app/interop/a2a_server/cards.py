"""An agent's A2A agent card: who it is, where to call it, what it can do, how to authenticate."""

from __future__ import annotations

from a2a.types import AgentCapabilities, AgentCard, AgentSkill, HTTPAuthSecurityScheme, SecurityScheme

from app.agents.schemas import Agent

MODES = ["text/plain", "application/json"]
BEARER = "bearer"


def card_url(base_url: str, agent: Agent) -> str:
    return f"{base_url}/a2a/{agent.id}"


def _skills(agent: Agent) -> list[AgentSkill]:
    """One skill per tool of the agent (`builtin:NAME`, `mcp:SERVER`, `claude:NAME`), tagged by its kind."""
    skills = []
    for entry in agent.config.get("tools") or []:
        kind, _, name = str(entry).partition(":")
        skills.append(
            AgentSkill(id=str(entry), name=name or kind, description=f"{kind} tool {name}", tags=[kind, "tool"])
        )
    return skills


def card_of(agent: Agent, base_url: str, *, push_notifications: bool) -> AgentCard:
    """`push_notifications`: the service delivers them (its webhook delivery worker runs, WEBHOOK_ENABLED)."""
    scheme = HTTPAuthSecurityScheme(
        scheme="bearer", bearer_format="JWT", description="The same bearer token as the REST API."
    )
    return AgentCard(
        name=agent.name,
        description=agent.description or f"The agent {agent.name!r} of agent-runtime.",
        version=str(agent.version),
        url=card_url(base_url, agent),
        preferred_transport="JSONRPC",
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=push_notifications, state_transition_history=False
        ),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=_skills(agent),
        security_schemes={BEARER: SecurityScheme(root=scheme)},
        security=[{BEARER: []}],
    )
