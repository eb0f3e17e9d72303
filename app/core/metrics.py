"""Prometheus metrics of the service (exposed at /metrics; names and labels per DESIGN.md "Operations")."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import QueuePool

TURNS_STARTED = Counter("agent_runtime_turns_started_total", "Turn runs started (new turns and resumes)")
TURNS_ENDED = Counter("agent_runtime_turns_ended_total", "Turn runs ended, by status", ["status"])
LIVE_TURNS = Gauge("agent_runtime_live_turns", "Turn runs executing in this process")

HTTP_DURATION = Histogram(
    "agent_runtime_http_request_duration_seconds",
    "HTTP requests, from the request to the end of the response (a stream: its whole life)",
    ["method", "route", "status"],
)
TIME_TO_FIRST_TOKEN = Histogram(
    "agent_runtime_time_to_first_token_seconds",
    "From the start of a model call to its first streamed text",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30),
)
TOKENS = Counter(
    "agent_runtime_tokens_total",
    "Model tokens, by provider, model and kind (input, output)",
    ["provider", "model", "kind"],
)
TOOL_CALLS = Counter(
    "agent_runtime_tool_calls_total", "Tool calls settled, by tool and outcome (ok, error)", ["tool", "outcome"]
)
POLICY_DECISIONS = Counter(
    "agent_runtime_policy_decisions_total", "Policy decisions, by point and verdict", ["point", "verdict"]
)
PROVIDER_ERRORS = Counter(
    "agent_runtime_provider_errors_total", "Failed model calls, by provider and error code", ["provider", "code"]
)
OPEN_STREAMS = Gauge("agent_runtime_open_streams", "SSE responses being sent by this process")
DB_POOL_CONNECTIONS = Gauge(
    "agent_runtime_db_pool_connections",
    "Database connections of this process, by pool (turns, api) and state (in_use, idle)",
    ["pool", "state"],
)


def observe_pools(engine: AsyncEngine, sql: object) -> None:
    """Set `agent_runtime_db_pool_connections` from the pools as they are now (called at each scrape)."""
    pool = engine.pool
    if isinstance(pool, QueuePool):
        DB_POOL_CONNECTIONS.labels(pool="api", state="in_use").set(pool.checkedout())
        DB_POOL_CONNECTIONS.labels(pool="api", state="idle").set(pool.checkedin())
    counts = getattr(sql, "pool_connections", None)
    if callable(counts):
        in_use, idle = counts()
        DB_POOL_CONNECTIONS.labels(pool="turns", state="in_use").set(in_use)
        DB_POOL_CONNECTIONS.labels(pool="turns", state="idle").set(idle)
