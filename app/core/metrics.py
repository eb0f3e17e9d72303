"""Prometheus metrics of the service (exposed at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

TURNS_STARTED = Counter("agent_runtime_turns_started_total", "Turn runs started (new turns and resumes)")
TURNS_ENDED = Counter("agent_runtime_turns_ended_total", "Turn runs ended, by status", ["status"])
LIVE_TURNS = Gauge("agent_runtime_live_turns", "Turn runs executing in this process")
