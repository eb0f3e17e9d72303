"""/metrics after a tool turn: every metric DESIGN.md lists, with its label names and plausible values."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.settings import AnthropicSettings, Settings
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session
from tests.sse import read_turn
from tests.turns.loopback import serve_on_loopback
from tests.turns.support import scripted_session, slow_session

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _samples(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _label_names(samples: Samples, name: str) -> set[frozenset[str]]:
    return {frozenset(k for k, _ in labels if k != "le") for sample, labels in samples if sample == name}


async def test_metrics_after_a_tool_turn(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    echo = {"text": "checking", "tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}
    session = await scripted_session(
        client,
        alice,
        echo,
        {"text": "done now"},
        policies=[{"id": "no-time", "point": "tool", "tool": "current_time", "verdict": "deny"}],
    )
    before = await _samples(client)
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
    assert frames[-1].data["status"] == "completed"
    after = await _samples(client)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    route = {"method": "POST", "route": "/sessions/{session_id}/turns", "status": "200"}
    assert grew("agent_runtime_http_request_duration_seconds_count", **route) == 1
    assert grew("agent_runtime_time_to_first_token_seconds_count", provider="scripted") == 2
    usage = frames[-1].data["usage"]
    assert (
        grew("agent_runtime_tokens_total", provider="scripted", model="scripted", kind="output")
        == usage["output_tokens"]
    )
    assert (
        grew("agent_runtime_tokens_total", provider="scripted", model="scripted", kind="input") == usage["input_tokens"]
    )
    assert grew("agent_runtime_tool_calls_total", tool="echo", outcome="ok") == 1
    assert grew("agent_runtime_policy_decisions_total", point="tool", verdict="allow") == 1
    assert _value(after, "agent_runtime_open_streams") == 0
    assert _label_names(after, "agent_runtime_db_pool_connections") == {frozenset({"pool", "state"})}
    pools = {dict(labels)["pool"] for name, labels in after if name == "agent_runtime_db_pool_connections"}
    assert pools == {"api", "turns"}
    assert _value(after, "agent_runtime_db_pool_connections", pool="api", state="idle") >= 1


async def test_denied_tool_calls_and_provider_errors_are_counted(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alice: dict[str, str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = make_settings(database_url, tmp_path, anthropic=AnthropicSettings(api_key=None))
    async with running_app(settings) as (_, client):
        deny = [{"id": "no-echo", "point": "tool", "tool": "echo", "verdict": "deny"}]
        echo = {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}
        denied = await scripted_session(client, alice, echo, {"text": "ok"}, policies=deny)
        config = {"model": {"provider": "anthropic", "name": "claude-x"}, "system_prompt": "x"}
        broken = await create_session(client, alice, (await create_agent(client, alice, config))["id"])
        before = await _samples(client)
        for session in (denied, broken):
            await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
        after = await _samples(client)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("agent_runtime_tool_calls_total", tool="echo", outcome="denied") == 1
    assert grew("agent_runtime_policy_decisions_total", point="tool", verdict="deny") == 1
    assert grew("agent_runtime_provider_errors_total", provider="anthropic", code="provider_not_configured") == 1


async def test_open_streams_counts_a_stream_while_it_is_open(settings: Settings, alice: dict[str, str]) -> None:
    async with serve_on_loopback(settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        session = await slow_session(client, alice, text="a b c d e f g h i j", delay_ms=300)
        before = _value(await _samples(client), "agent_runtime_open_streams")
        turn = f"/sessions/{session['id']}/turns"
        async with client.stream("POST", turn, json={"input": "x"}, headers=alice) as response:
            lines = response.aiter_lines()
            await anext(lines)
            during = _value(await _samples(client), "agent_runtime_open_streams")
            await client.post(f"/turns/{await _turn_id(client, alice, session['id'])}/cancel", headers=alice)
            async for _ in lines:
                pass
        after = _value(await _samples(client), "agent_runtime_open_streams")
    assert (during, after) == (before + 1, before)


async def _turn_id(client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> str:
    return str((await client.get(f"/sessions/{session_id}/turns", headers=headers)).json()["items"][0]["id"])
