"""Grouped settings, read once from the environment (DESIGN.md "Running it")."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def _comma_separated(value: object) -> object:
    return [item.strip() for item in value.split(",") if item.strip()] if isinstance(value, str) else value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_separated)]
"""A list given in the environment as `a,b,c`."""
CommaPaths = Annotated[list[Path], NoDecode, BeforeValidator(_comma_separated)]


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


LogFormat = Annotated[Literal["json", "console"], BeforeValidator(_lower)]
LogLevel = Annotated[Literal["debug", "info", "warning", "error"], BeforeValidator(_lower)]
"""Enumerated settings are read case-insensitively (`LOG_LEVEL=WARNING` as most tools take it)."""


def _group(prefix: str) -> SettingsConfigDict:
    return SettingsConfigDict(env_prefix=prefix, extra="ignore", env_file=None)


class DbSettings(BaseSettings):
    model_config = _group("DATABASE_")
    url: str = ""
    pool_size: int = Field(default=50, ge=1)
    """At most this many connections for running turns (PostgreSQL: an asyncpg pool, opened on
    demand and kept while in use); a turn holds one only for the length of a statement."""
    api_pool_size: int = Field(default=10, ge=1)
    """Connections kept open for the REST resources (the ORM), plus `max_overflow` at peaks.
    Overflow connections are closed when returned and reconnecting costs far more than waiting
    for a pooled one, so the pools are sized for the load."""
    max_overflow: int = Field(default=10, ge=0)
    pool_timeout_seconds: float = Field(default=60.0, gt=0)

    @property
    def max_connections(self) -> int:
        """The most PostgreSQL connections one process opens: both pools and the LISTEN connection."""
        return self.pool_size + self.api_pool_size + self.max_overflow + 1

    echo: bool = False


class AuthSettings(BaseSettings):
    """Inbound bearer-token verification: HS256 secret, or a JWKS with issuer and audience."""

    model_config = _group("AUTH_")
    jwt_secret: str | None = None
    jwks_url: str | None = None
    issuer: str | None = None
    audience: str | None = None
    leeway_seconds: int = Field(default=30, ge=0, le=60)
    jwks_cache_seconds: int = Field(default=300, ge=0)


class SigningSettings(BaseSettings):
    """Outbound per-turn tokens (MCP gateway, Context Engine)."""

    model_config = _group("SIGNING_")
    key_file: Path | None = None
    extra_public_key_files: CommaPaths = Field(default_factory=list)
    """Comma-separated PEM files still published in the JWKS (keys being rotated out or in)."""
    issuer: str = "agent-runtime"

    token_ttl_seconds: int = Field(default=300, ge=10, le=300)


class AnthropicSettings(BaseSettings):
    model_config = _group("ANTHROPIC_")
    api_key: str | None = None
    base_url: str | None = None
    timeout_seconds: float = 120.0
    max_retries: int = Field(default=2, ge=0)


class OpenAISettings(BaseSettings):
    """The `openai` provider's process-wide defaults (a tenant credential wins over them)."""

    model_config = _group("OPENAI_")
    api_key: str | None = None
    base_url: str | None = None
    timeout_seconds: float = 120.0
    max_retries: int = Field(default=2, ge=0)


class GeminiSettings(BaseSettings):
    """The `gemini` provider's process-wide defaults (a tenant credential wins over them)."""

    model_config = _group("GEMINI_")
    api_key: str | None = None
    base_url: str | None = None
    timeout_seconds: float = 120.0
    max_retries: int = Field(default=2, ge=0)


class ProviderSettings(BaseSettings):
    model_config = _group("PROVIDER_")
    allowed_hosts: CommaList = Field(default_factory=list)
    """Hosts a tenant credential's `base_url` may name although they resolve to private,
    loopback or link-local addresses (an in-cluster vLLM, a local Ollama)."""
    max_connections: int = Field(default=500, ge=1)
    """Connections to model providers open at once, per replica (a streaming turn holds one); split
    into pools of at most 500 (app/providers/clients.py)."""


class SecretsSettings(BaseSettings):
    model_config = _group("SECRETS_")
    key_file: Path | None = None
    """AES-256 keys that encrypt stored provider keys; generated into DATA_DIR when unset."""


class ContextEngineSettings(BaseSettings):
    model_config = _group("CONTEXT_ENGINE_")
    url: str | None = None
    timeout_seconds: float = 5.0


class McpGatewaySettings(BaseSettings):
    model_config = _group("MCP_GATEWAY_")
    url: str | None = None
    timeout_seconds: float = 30.0


class ClaudeSdkSettings(BaseSettings):
    """The `claude_sdk` runtime: one Claude Code process per active session (app/claude_sdk/pool.py)."""

    model_config = _group("CLAUDE_SDK_")
    max_sessions: int = Field(default=8, ge=1, le=1000)
    """Live Claude Code processes per replica; a turn beyond it answers 429 `too_many_turns`."""
    idle_seconds: float = Field(default=300.0, gt=0)
    """A session's process is closed after this long without a turn."""
    cli_path: Path | None = None
    """The Claude Code executable; unset = the one bundled in the `claude-agent-sdk` wheel."""


class ShutdownSettings(BaseSettings):
    model_config = _group("SHUTDOWN_")
    grace_seconds: float = Field(default=25.0, ge=0)
    """After SIGTERM, how long running turns get to finish before the process stops (k8s gives the pod
    `terminationGracePeriodSeconds`, which must be longer)."""


class HttpSettings(BaseSettings):
    model_config = _group("")
    cors_origins: CommaList = Field(default_factory=list)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    sse_ping_seconds: float = Field(default=15.0, gt=0)
    web_local_sign_in: bool = True
    """The web page's one-click token for 127.0.0.1 when the service generated its own secret."""


class FileSettings(BaseSettings):
    """Attachments (`POST /files`)."""

    model_config = _group("FILE_")
    max_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    store_dir: Path | None = None
    """Where file bytes go, each under its id; unset: in the database (`bytea` / blob)."""


class LifecycleSettings(BaseSettings):
    """Idle expiry and retention of sessions (DESIGN.md "Operations" → Retention); 0 turns either off."""

    model_config = _group("")
    session_idle_ttl_seconds: int = Field(default=0, ge=0)
    retention_days: int = Field(default=0, ge=0)
    session_sweep_seconds: float = Field(default=60.0, gt=0)
    """How often one replica sweeps (expiry, then retention), each pass a bounded batch."""


class ScheduleSettings(BaseSettings):
    model_config = _group("SCHEDULE_")
    min_interval_seconds: int = Field(default=60, ge=1)
    """The closest two ticks of one schedule may be (a guard against a turn every second)."""
    poll_seconds: float = Field(default=5.0, gt=0)
    """How often each replica looks for due schedules (a tick fires at most this late)."""


class EvalSettings(BaseSettings):
    model_config = _group("EVAL_")
    poll_seconds: float = Field(default=2.0, gt=0)
    """How often each replica looks for eval runs nobody runs (new ones, or a dead replica's)."""
    max_connections: int = Field(default=4, ge=1)
    """The most API-pool connections the eval runner holds at once (its transactions and eval-session
    inserts wait for one): a run of many items in parallel never starves the requests."""


class GuardrailSettings(BaseSettings):
    """The `output` point's streaming guard (app/governance/output_guard.py)."""

    model_config = _group("")
    output_guard_holdback_chars: int = Field(default=256, ge=16, le=65536)
    """The most of a reply's tail held back while it could still become a match."""


class ObservabilitySettings(BaseSettings):
    """Logs, traces (DESIGN.md "Operations")."""

    model_config = _group("")
    log_format: LogFormat = "json"
    log_level: LogLevel = "info"
    otel_exporter_otlp_endpoint: str | None = None
    """Traces are on when set: OTLP/HTTP to `{endpoint}/v1/traces` (needs the `otlp` extra)."""
    otel_service_name: str = "agent-runtime"


class WebhookSettings(BaseSettings):
    model_config = _group("WEBHOOK_")
    enabled: bool = True
    """The delivery worker runs (webhooks are sent), and A2A agents offer push notifications, which
    it delivers; off, no delivery leaves this replica and agent cards say `pushNotifications: false`."""
    allowed_hosts: CommaList = Field(default_factory=list)
    """Hosts a webhook may target even when they resolve to private, loopback or link-local addresses."""
    secrets_key_file: Path | None = None
    """Base64 AES-256 key that encrypts the signing secrets (generated into DATA_DIR when unset)."""
    timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    retry_first_seconds: float = Field(default=5.0, gt=0)
    """The wait after the first failed attempt; it doubles after each further one (at most an hour)."""
    retry_window_seconds: float = Field(default=86_400.0, gt=0)
    """A delivery is retried until this long after its event, then given up (`failed`)."""
    poll_seconds: float = Field(default=1.0, gt=0)
    """How often the delivery worker looks for due deliveries."""


class ModelPrice(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


DEFAULT_MODEL_PRICES: dict[str, ModelPrice] = {
    name: ModelPrice(input=prices[0], output=prices[1])
    for name, prices in {
        "claude-opus-4-1": (15.0, 75.0),
        "claude-sonnet-4-5": (3.0, 15.0),
        "claude-sonnet-4-0": (3.0, 15.0),
        "claude-haiku-4-5": (1.0, 5.0),
        "gpt-4.1": (2.0, 8.0),
        "gpt-4.1-mini": (0.4, 1.6),
        "gpt-4o": (2.5, 10.0),
        "gpt-4o-mini": (0.15, 0.6),
        "gemini-2.5-pro": (1.25, 10.0),
        "gemini-2.5-flash": (0.3, 2.5),
    }.items()
}
"""List prices as published when this table was written; `MODEL_PRICES` corrects or extends it."""


class PricingSettings(BaseSettings):
    model_config = _group("")
    model_prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """`MODEL_PRICES` as JSON, `{"model-name": {"input": 3, "output": 15}}` in USD per million tokens,
    merged over DEFAULT_MODEL_PRICES (the web page shows each turn's cost from it)."""

    def table(self) -> dict[str, ModelPrice]:
        return {**DEFAULT_MODEL_PRICES, **self.model_prices}


class Settings(BaseSettings):
    model_config = _group("")
    data_dir: Path = Path("./data")
    autonomy_enabled: bool = True
    graph_driver: Literal["direct", "pregel"] = "direct"
    """How the `langgraph` runtime runs its loop: `direct` steps the graph's nodes and edges itself,
    `pregel` runs the compiled LangGraph `StateGraph` (same nodes, edges and events; ~0.3 ms of CPU more
    per step)."""
    """Whether turns may ask for `mode: "autonomous"` (the agent's `autonomy.enabled` must allow it too)."""
    db: DbSettings = Field(default_factory=DbSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    signing: SigningSettings = Field(default_factory=SigningSettings)
    anthropic: AnthropicSettings = Field(default_factory=AnthropicSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    gemini: GeminiSettings = Field(default_factory=GeminiSettings)
    providers: ProviderSettings = Field(default_factory=ProviderSettings)
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)
    context_engine: ContextEngineSettings = Field(default_factory=ContextEngineSettings)
    mcp_gateway: McpGatewaySettings = Field(default_factory=McpGatewaySettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    files: FileSettings = Field(default_factory=FileSettings)
    shutdown: ShutdownSettings = Field(default_factory=ShutdownSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    claude_sdk: ClaudeSdkSettings = Field(default_factory=ClaudeSdkSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    evals: EvalSettings = Field(default_factory=EvalSettings)
    guardrails: GuardrailSettings = Field(default_factory=GuardrailSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    pricing: PricingSettings = Field(default_factory=PricingSettings)

    @property
    def database_url(self) -> str:
        return self.db.url or f"sqlite+aiosqlite:///{self.data_dir / 'agent-runtime.db'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()


def _groups() -> dict[str, type[BaseSettings]]:
    groups: dict[str, type[BaseSettings]] = {"Settings": Settings}
    for field in Settings.model_fields.values():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings):
            groups[field.annotation.__name__] = field.annotation
    return groups


def describe_invalid_setting(error: ValidationError) -> str:
    """One line naming the environment variable and what it takes, never the value (it may be a secret)."""
    group = _groups().get(error.title, Settings)
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    variable = f"{group.model_config.get('env_prefix', '')}{name}".upper()
    field = group.model_fields.get(name)
    choices = [arg for arg in get_args(field.annotation if field else None) if isinstance(arg, str)]
    if choices:
        return f"invalid setting {variable}: expected one of {', '.join(choices)}"
    return f"invalid setting {variable}: {first['msg'][0].lower()}{first['msg'][1:]}"
