"""The agent configuration document (DESIGN.md "Agent configuration"), validated field by field."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.context.compaction import DEFAULT_KEEP_LAST, DEFAULT_TRIGGER_RATIO
from app.credentials.schemas import CREDENTIAL_NAME
from app.governance.policy import PolicyRule, ToolGlob
from app.providers.context_windows import context_window, estimate_tokens
from app.structured.schema import CLAUDE_SDK_NO_SCHEMA, OUTPUT_SCHEMA_UNSUPPORTED, OutputSchema

BUILTIN_TOOL_NAMES = ("calculator", "current_time", "echo", "memory")
CLAUDE_TOOL_NAMES = ("Read", "Write", "Edit", "Glob", "Grep")
"""Claude Code's own tools an agent of the `claude_sdk` runtime may list as `claude:NAME`: the file
tools, confined to the session's working directory by our gate (app/claude_sdk/surface.py). The
shell and web tools are not offered: nothing here can confine them (docs/decisions.md)."""
_TOOL_REF = re.compile(
    r"^(builtin:(" + "|".join(BUILTIN_TOOL_NAMES) + r")|mcp:[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
    r"|claude:(" + "|".join(CLAUDE_TOOL_NAMES) + r"))$"
)
Runtime = Literal["langgraph", "claude_sdk"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptToolCall(_Strict):
    name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptStep(_Strict):
    text: str | None = None
    tool_calls: list[ScriptToolCall] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_of(self) -> ScriptStep:
        if self.text is None and not self.tool_calls:
            raise ValueError("a script step needs `text` or `tool_calls`")
        return self


class ModelConfig(_Strict):
    provider: Literal["anthropic", "openai", "gemini", "scripted"]
    name: str | None = Field(default=None, min_length=1, max_length=200)
    max_tokens: StrictInt = Field(default=1024, ge=1, le=128_000)
    credential: str | None = Field(
        default=None,
        pattern=CREDENTIAL_NAME,
        description="A tenant credential (`/credentials/{name}`); without it, the one named after the provider.",
    )
    context_window: StrictInt | None = Field(
        default=None, ge=1024, le=100_000_000, description="Tokens; overrides the built-in table of known models."
    )
    script: list[ScriptStep] | None = Field(default=None, min_length=1, max_length=1000)
    chunk_delay_ms: StrictInt = Field(default=0, ge=0, le=10_000)

    @model_validator(mode="after")
    def _provider_fields(self) -> ModelConfig:
        if self.provider == "scripted" and not self.script:
            raise ValueError("the scripted provider needs a non-empty `script`")
        if self.provider != "scripted" and not self.name:
            raise ValueError(f"the {self.provider} provider needs a model `name`")
        return self


class Limits(_Strict):
    """Per-turn limits; an unset one is the service default (8 loops, 20,000 output tokens, no total
    cap), and the tenant's ceilings apply on top at run time (app/governance/limits.py)."""

    max_loops: StrictInt | None = Field(default=None, ge=1, le=100)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=10_000_000)
    max_total_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000_000)


class CompactionConfig(_Strict):
    """When and how the built-in context compacts (DESIGN.md "Compaction (built-in context)")."""

    strategy: Literal["summarize", "window"] = "summarize"
    trigger_ratio: float = Field(default=DEFAULT_TRIGGER_RATIO, gt=0, le=1)
    keep_last_messages: StrictInt = Field(default=DEFAULT_KEEP_LAST, ge=2, le=1000)


class AutonomyConfig(_Strict):
    enabled: bool = False
    max_steps: StrictInt = Field(default=12, ge=1, le=100)


class ContextConfig(_Strict):
    team_unit: str = Field(default="default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
    guardrail_hashes: list[str] = Field(default_factory=list, max_length=100)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)


class AgentConfig(_Strict):
    model: ModelConfig
    system_prompt: str = Field(default="", max_length=200_000)
    runtime: Runtime = "langgraph"
    """Declared before `tools`, whose validation depends on it."""
    tools: list[str] = Field(default_factory=list, max_length=100)
    tool_blacklist: list[ToolGlob] = Field(default_factory=list, max_length=200)
    policies: list[PolicyRule] = Field(default_factory=list, max_length=500)
    limits: Limits = Field(default_factory=Limits)
    context: ContextConfig = Field(default_factory=ContextConfig)
    autonomy: AutonomyConfig = Field(default_factory=AutonomyConfig)
    output_schema: OutputSchema | None = None

    @field_validator("tools")
    @classmethod
    def _tool_refs(cls, tools: list[str], info: ValidationInfo) -> list[str]:
        for ref in tools:
            if not _TOOL_REF.match(ref):
                names = ", ".join(BUILTIN_TOOL_NAMES)
                claude = ", ".join(CLAUDE_TOOL_NAMES)
                raise ValueError(
                    f"unknown tool reference {ref!r}: use builtin:NAME ({names}), mcp:SERVER_ID"
                    f" or, with runtime claude_sdk, claude:NAME ({claude})"
                )
            if ref.startswith("claude:") and info.data.get("runtime") != "claude_sdk":
                raise ValueError(f'{ref!r}: claude:NAME tools need "runtime": "claude_sdk"')
        if len(set(tools)) != len(tools):
            raise ValueError("tools must not repeat")
        return tools

    @model_validator(mode="after")
    def _window_holds_the_system_prompt(self) -> AgentConfig:
        window = context_window(self.model.provider, self.model.name or "", self.model.context_window)
        needed = estimate_tokens(self.system_prompt, self.model.provider)
        if needed >= window:
            raise ValueError(
                f"the model's context window ({window} tokens, model.context_window or the built-in table) "
                f"must be larger than the system prompt (about {needed} tokens)"
            )
        return self

    @model_validator(mode="after")
    def _runtime_model(self) -> AgentConfig:
        if self.runtime == "claude_sdk" and self.model.provider != "anthropic":
            raise ValueError('the claude_sdk runtime needs model.provider "anthropic" (Claude Code speaks its API)')
        if self.runtime == "claude_sdk" and self.output_schema is not None:
            raise PydanticCustomError(OUTPUT_SCHEMA_UNSUPPORTED, CLAUDE_SDK_NO_SCHEMA)
        return self

    @field_validator("policies")
    @classmethod
    def _unique_ids(cls, rules: list[PolicyRule]) -> list[PolicyRule]:
        ids = [r.id for r in rules]
        if len(set(ids)) != len(ids):
            raise ValueError("policy ids must be unique")
        return rules

    def as_document(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


CONFIG_DOCUMENT_MARK = "x-agent-config-document"
ConfigDocument = Annotated[dict[str, Any], WithJsonSchema({"type": "object", CONFIG_DOCUMENT_MARK: True})]
"""A stored configuration as JSON, documented as `AgentConfig` (it was validated by it when written).

Read back as a plain document, so a version written under an older schema still reads. In OpenAPI
it is the one `AgentConfig` schema (app.main swaps the mark for a `$ref`), so a generated client
gets a typed model, not a second inline model named after the property."""
