"""The tool of each agent: its name (from the agent's name), its schemas, and the arguments of a call."""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from app.agents.schemas import Agent

MAX_NAME = 64
SUFFIX = 6
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "minLength": 1, "description": "The message for the agent."},
        "session": {
            "type": "string",
            "minLength": 1,
            "maxLength": 256,
            "description": "Your name for the conversation (get-or-create), or a session id; omit for a new one.",
        },
        "agent_version": {"type": "integer", "minimum": 1, "description": "Pin a new session to this version."},
    },
    "required": ["input"],
    "additionalProperties": False,
}
RESULT_PROPERTIES: dict[str, Any] = {
    "turn_id": {"type": "string"},
    "session_id": {"type": "string"},
    "status": {"type": "string"},
    "usage": {"type": "object"},
}


class ToolArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: str = Field(min_length=1, max_length=200_000)
    session: str | None = Field(default=None, min_length=1, max_length=256)
    agent_version: StrictInt | None = Field(default=None, ge=1)

    @classmethod
    def parse(cls, arguments: dict[str, Any] | None) -> ToolArguments:
        try:
            return cls.model_validate(arguments or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            raise ValueError(f"{where}: {first['msg']}") from None


def base_name(agent_name: str) -> str:
    name = _UNSAFE.sub("_", agent_name).strip("_-")[:MAX_NAME]
    return name or "agent"


def tool_names(agents: list[Agent]) -> dict[str, Agent]:
    """Each agent's tool name, oldest agent first: a name already taken gets a suffix from the agent's id,
    so an agent keeps its name when a younger one with the same name appears."""
    named: dict[str, Agent] = {}
    for agent in agents:
        name = base_name(agent.name)
        if name in named:
            name = f"{name[: MAX_NAME - SUFFIX - 1]}-{agent.id.hex[:SUFFIX]}"
        named[name] = agent
    return named


def output_schema_of(agent: Agent) -> dict[str, Any] | None:
    """The agent's own output schema (`config.output_schema`), when it declares one."""
    schema = agent.config.get("output_schema")
    return schema if isinstance(schema, dict) else None


def tool_of(name: str, agent: Agent) -> types.Tool:
    output = output_schema_of(agent)
    result_schema = None
    if output is not None:
        result_schema = {
            "type": "object",
            "properties": {**RESULT_PROPERTIES, "output": output},
            "required": ["turn_id", "session_id", "status"],
        }
    return types.Tool(
        name=name,
        title=agent.name,
        description=agent.description or f"Ask the agent {agent.name!r}.",
        input_schema=INPUT_SCHEMA,
        output_schema=result_schema,
        meta={"agent-runtime/agent_id": str(agent.id), "agent-runtime/version": agent.version},
    )
