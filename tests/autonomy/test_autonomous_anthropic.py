"""Autonomous turns on the anthropic provider, against a loopback server speaking its Messages wire format: a
plan run to completion, and an approval inside a step resumed after a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from app.settings import AnthropicSettings, ProviderSettings, Settings
from tests.conftest import make_settings, running_app
from tests.llm_servers import LlmServer, anthropic_reply, llm_server
from tests.sse import Frame, read_turn

PLAN = json.dumps({"todos": [{"title": "multiply"}, {"title": "add"}]})
KEY = "sk-ant-operator-KEY-0123456789abcdef"


def _answer(body: dict[str, Any], answered: bool) -> list[bytes]:
    """The plan for the PLAN call; per step a calculator call, then a sentence; the summary last."""
    system = json.dumps(body.get("system", ""))
    if "You are planning" in system:
        return anthropic_reply(body, PLAN, None)
    if "closing summary" in system:
        return anthropic_reply(body, "Multiplied, then added.", None)
    messages = [json.dumps(m) for m in body["messages"]]
    goal = max(i for i, m in enumerate(messages) if "Now do only this step:" in m)
    step = "add" if "this step: add" in messages[goal] else "multiply"
    if any('"tool_result"' in m for m in messages[goal + 1 :]):
        return anthropic_reply(body, f"{step} done", None)
    arguments = {"expression": "2+3" if step == "add" else "6*7"}
    return anthropic_reply(body, "computing", arguments, call_id=f"toolu_{step}")  # ids are unique, like the API's


CONFIG = {
    "model": {"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": 200},
    "tools": ["builtin:calculator"], "autonomy": {"enabled": True},
}  # fmt: skip
GATED = {**CONFIG, "policies": [{"id": "calc", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}]}


def _settings(database_url: str, tmp_path: Path, server: LlmServer) -> Settings:
    return make_settings(
        database_url, tmp_path, providers=ProviderSettings(allowed_hosts=["127.0.0.1"]),
        anthropic=AnthropicSettings(api_key=KEY, base_url=server.url, max_retries=0),
    )  # fmt: skip


async def _start(client: httpx.AsyncClient, headers: dict[str, str], config: dict[str, Any]) -> list[Frame]:
    """An autonomous turn of a new agent with `config` on a new session."""
    agent = (await client.post("/agents", json={"name": "a", "config": config}, headers=headers)).json()
    session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=headers)).json()
    return await read_turn(
        client, "POST", f"/sessions/{session['id']}/turns",
        json={"input": "6*7, then 2+3", "mode": "autonomous"}, headers=headers,
    )  # fmt: skip


async def test_an_autonomous_turn_runs_its_plan_on_the_anthropic_provider(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    async with (
        llm_server("anthropic", _answer) as server,
        running_app(_settings(database_url, tmp_path, server)) as (_, client),
    ):
        frames = await _start(client, alice, CONFIG)
    assert [f.data["todos"] for f in frames if f.event == "plan.created"] == [
        [{"id": "todo_1", "title": "multiply"}, {"id": "todo_2", "title": "add"}]
    ]
    completed = [
        (f.data["todo_id"], f.data["status"], f.data["output"]) for f in frames if f.event == "plan.step.completed"
    ]
    assert completed == [("todo_1", "done", "multiply done"), ("todo_2", "done", "add done")]
    assert [f.data["result"] for f in frames if f.event == "tool_call.completed"] == ["42", "5"]
    assert (frames[-1].data["status"], frames[-1].data["final_output"]) == ("completed", "Multiplied, then added.")
    assert len(server.requests) == 6
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {KEY}"}


async def test_an_approval_inside_a_step_resumes_after_a_restart_with_the_steps_goal_in_the_prompt(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    async with llm_server("anthropic", _answer) as server:
        settings = _settings(database_url, tmp_path, server)
        async with running_app(settings) as (_, client):
            first = await _start(client, alice, GATED)
        assert first[-1].data["status"] == "interrupted"
        sent_before_restart = len(server.requests)
        frames: list[Frame] = []
        async with running_app(settings) as (_, client):
            while frames == [] or frames[-1].data["status"] == "interrupted":
                waiting = [f.data["approval_id"] for f in (frames or first) if f.event == "approval.required"]
                frames = await read_turn(
                    client, "POST", f"/approvals/{waiting[0]}", json={"decision": "approve"}, headers=alice
                )
    assert (frames[-1].data["status"], frames[-1].data["final_output"]) == ("completed", "Multiplied, then added.")
    resumed_call = json.dumps(server.requests[sent_before_restart].body["messages"])
    assert "Now do only this step: multiply" in resumed_call
    assert '"tool_result"' in resumed_call
    assert len(server.requests) == 6
