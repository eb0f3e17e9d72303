"""The `output` point over HTTP: what a rule redacts is in no frame, row, replay or log line; a deny
ends the turn `guardrail_blocked` with what already streamed; tenant rules apply the same way."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.governance import gate
from app.models import Message, PolicyDecision, TurnEvent, WebhookDelivery
from app.settings import WebhookSettings
from tests.approvals.helpers import ended, events, open_session, run_turn, start_turn, turn_id
from tests.autonomy.support import AUTONOMY, plan
from tests.conftest import TokenFactory, make_settings, running_app
from tests.factories import create_agent, scripted_config
from tests.sse import Frame, read_turn

CARD = "4111 1111 1111 1111"
KEY = "sk-live-Zk3q9XvB2mT7pLw4RcY8nH1s"
REPLY = f"Your card {CARD} and key {KEY} are on file."
GUARDED = "Your card [REDACTED:credit_card] and key <key> are on file."
REDACT = [
    {"id": "cards", "point": "output", "detect": "credit_card", "verdict": "redact"},
    {"id": "keys", "point": "output", "detect": "api_key", "verdict": "redact", "replacement": "<key>"},
]
CODENAME = {"id": "codename", "point": "output", "output_regex": "(?i)falcon", "verdict": "deny", "reason": "secret"}


def fragments() -> Iterator[str]:
    """Every 6-character piece of the key and every two groups of the card: no byte run of either may show."""
    yield from (KEY[i : i + 6] for i in range(len(KEY) - 5))
    yield from ("4111 1111", "1111 1111")


def assert_clean(text: str) -> None:
    leaked = [piece for piece in fragments() if piece in text]
    assert leaked == [], leaked


def frames_text(frames: list[Frame]) -> str:
    return "\n".join(json.dumps(f.data) for f in frames)


async def test_redacted_text_reaches_no_client_surface(
    any_backend: httpx.AsyncClient, alice: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    session = await open_session(any_backend, alice, scripted_config({"text": REPLY}, policies=REDACT))
    caplog.set_level(logging.DEBUG)
    caplog.clear()  # the scripted model's script (in the agent's config) holds the raw reply
    frames = await start_turn(any_backend, alice, session, "show me")
    turn = turn_id(frames)
    assert ended(frames)["status"] == "completed"
    assert "".join(e["text"] for e in events(frames, "message.delta")) == GUARDED
    assert [e["text"] for e in events(frames, "message.completed")] == [GUARDED]
    assert ended(frames)["final_output"] == GUARDED
    replay = await read_turn(any_backend, "GET", f"/turns/{turn}/events?after=0", headers=alice)
    messages = (await any_backend.get(f"/sessions/{session['id']}/messages", headers=alice)).json()
    read = (await any_backend.get(f"/turns/{turn}", headers=alice)).json()
    decisions = (await any_backend.get(f"/turns/{turn}/decisions", headers=alice)).json()["items"]
    for surface in (frames_text(frames), frames_text(replay), json.dumps(messages), json.dumps(read), caplog.text):
        assert_clean(surface)
    assert [m["content"] for m in messages["items"] if m["role"] == "assistant"] == [GUARDED]
    output = [d for d in decisions if d["point"] == "output"]
    assert [(d["rule_id"], d["verdict"], d["detector"], d["match_count"]) for d in output] == [
        ("cards", "redact", "credit_card", 1),
        ("keys", "redact", "api_key", 1),
    ]
    events_seen = [(e["point"], e["detector"], e["match_count"]) for e in events(frames, "policy.decision")]
    assert ("output", "credit_card", 1) in events_seen


async def test_redacted_text_is_in_no_stored_row(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str]
) -> None:
    _, frames = await run_turn(client, alice, scripted_config({"text": REPLY}, policies=REDACT), "show me")
    turn = uuid.UUID(turn_id(frames))
    async with sql.connect() as conn:
        stored = [row.data for row in await conn.execute(select(TurnEvent.data).where(TurnEvent.turn_id == turn))]
        contents = [row.content for row in await conn.execute(select(Message.content).where(Message.turn_id == turn))]
        receipts = list(await conn.execute(select(PolicyDecision).where(PolicyDecision.turn_id == turn)))
    assert_clean("\n".join(stored))
    assert_clean("\n".join(contents))
    assert_clean(repr([tuple(r) for r in receipts]))
    assert GUARDED in contents


async def test_a_deny_ends_the_turn_guardrail_blocked_after_what_streamed(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    before = "word " * 80
    reply = before + "the Falcon project starts monday and more follows"
    session, frames = await run_turn(any_backend, alice, scripted_config({"text": reply}, policies=[CODENAME]))
    end = ended(frames)
    assert (end["status"], end["error"]["code"], end["error"]["message"]) == ("failed", "guardrail_blocked", "secret")
    streamed = "".join(e["text"] for e in events(frames, "message.delta"))
    assert streamed
    assert before.startswith(streamed)
    assert "Falcon" not in frames_text(frames)
    assert events(frames, "message.completed") == []
    decision = [e for e in events(frames, "policy.decision") if e["point"] == "output"]
    assert [(d["verdict"], d["rule_id"], d["detector"], d["match_count"]) for d in decision] == [
        ("deny", "codename", "regex", 1)
    ]
    messages = (await any_backend.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert [m["role"] for m in messages] == ["user"]


async def test_tenant_output_rules_apply_to_every_agent(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    root = auth_headers(tenant, "root", roles=["admin"])
    put = await client.put("/policies", json={"policies": REDACT}, headers=root)
    assert put.status_code == 200, put.text
    assert [r["point"] for r in put.json()["policies"]] == ["output", "output"]
    _, frames = await run_turn(client, alice, scripted_config({"text": REPLY}))
    assert ended(frames)["final_output"] == GUARDED
    assert_clean(frames_text(frames))


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"id": "r", "point": "output", "verdict": "redact", "output_regex": "("}, "output_regex"),
        ({"id": "r", "point": "output", "verdict": "redact", "detect": "passport"}, "detect"),
        ({"id": "r", "point": "output", "verdict": "requires_approval", "detect": "email"}, "verdict"),
        ({"id": "r", "point": "tool", "tool": "echo", "verdict": "redact"}, "verdict"),
        ({"id": "r", "point": "output", "verdict": "redact", "detect": "injection"}, "detect"),
        ({"id": "r", "point": "output", "verdict": "redact", "result_regex": "x"}, "result_regex"),
        ({"id": "r", "point": "tool_result", "verdict": "deny", "result_regex": "a{,2}"}, "result_regex"),
        ({"id": "r", "point": "pre_llm", "verdict": "deny", "input_regex": "x", "detect": "email"}, "detect"),
    ],
)
async def test_invalid_text_rules_are_422_naming_the_field(
    client: httpx.AsyncClient,
    tenant: str,
    alice: dict[str, str],
    auth_headers: TokenFactory,
    rule: dict[str, Any],
    field: str,
) -> None:
    root = auth_headers(tenant, "root", roles=["admin"])
    for response in (
        await client.put("/policies", json={"policies": [rule]}, headers=root),
        await client.post("/agents", json={"name": "a", "config": scripted_config(policies=[rule])}, headers=alice),
    ):
        assert response.status_code == 422, response.text
        locations = [error["loc"] for error in response.json()["errors"]]
        assert any(field in loc for loc in locations), locations


async def test_a_text_rule_needs_one_condition(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    for rule in (
        {"id": "r", "point": "output", "verdict": "redact"},
        {"id": "r", "point": "output", "verdict": "redact", "detect": "email", "output_regex": "x"},
    ):
        body = {"name": "a", "config": scripted_config(policies=[rule])}
        response = await client.post("/agents", json=body, headers=alice)
        assert response.status_code == 422, response.text
        assert "exactly one of output_regex and detect" in response.text


async def test_no_output_rule_no_guard(
    client: httpx.AsyncClient, alice: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[object] = []
    real = gate.OutputGuard

    def counted(*args: Any, **kwargs: Any) -> object:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(gate, "OutputGuard", counted)
    _, frames = await run_turn(client, alice, scripted_config({"text": REPLY}))
    assert ended(frames)["final_output"] == REPLY
    assert made == []
    _, frames = await run_turn(client, alice, scripted_config({"text": REPLY}, policies=REDACT))
    assert ended(frames)["final_output"] == GUARDED
    assert len(made) == 1


async def test_an_autonomous_turn_is_guarded_in_its_plan_steps_and_summary(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    steps = (plan("look it up"), {"text": f"found {CARD}"}, {"text": f"summary: the card is {CARD}"})
    config = scripted_config(*steps, autonomy=AUTONOMY, policies=REDACT)
    session = await open_session(any_backend, alice, config)
    url = f"/sessions/{session['id']}/turns"
    frames = await read_turn(any_backend, "POST", url, json={"input": "go", "mode": "autonomous"}, headers=alice)
    end = ended(frames)
    assert end["status"] == "completed"
    assert end["final_output"] == "summary: the card is [REDACTED:credit_card]"
    assert [e["output"] for e in events(frames, "plan.step.completed")] == ["found [REDACTED:credit_card]"]
    assert_clean(frames_text(frames))
    redactions = [e for e in events(frames, "policy.decision") if e["point"] == "output"]
    assert [(e["rule_id"], e["match_count"]) for e in redactions] == [("cards", 1), ("cards", 1)]


async def test_the_adapter_streams_carry_only_the_guarded_text(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, scripted_config({"text": REPLY}, policies=REDACT))
    ag_ui = {
        "threadId": "guard-1",
        "runId": str(uuid.uuid4()),
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
    }
    question = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    ai_sdk = {"id": "guard-2", "trigger": "submit-message", "messages": [question]}
    for url, body in ((f"/ag-ui/agents/{agent['id']}", ag_ui), (f"/ai-sdk/agents/{agent['id']}/chat", ai_sdk)):
        response = await client.post(url, json=body, headers=alice)
        assert response.status_code == 200, response.text
        assert "[REDACTED:credit_card]" in response.text
        assert_clean(response.text)


async def test_webhook_payloads_carry_only_the_guarded_text(
    database_url: str, sql: AsyncEngine, tmp_path: Path, tenant: str, auth_headers: TokenFactory
) -> None:
    hooks = WebhookSettings(allowed_hosts=["127.0.0.1"], poll_seconds=60)
    admin = auth_headers(tenant, "root", roles=["admin"])
    subscribed = ["message.delta", "message.completed", "policy.decision", "turn.ended"]
    async with running_app(make_settings(database_url, tmp_path, webhooks=hooks)) as (_, own):
        hook = await own.post("/webhooks", json={"url": "http://127.0.0.1:9/hook", "events": subscribed}, headers=admin)
        assert hook.status_code == 201, hook.text
        _, frames = await run_turn(own, admin, scripted_config({"text": REPLY}, policies=REDACT))
    async with sql.connect() as conn:
        rows = await conn.execute(
            select(WebhookDelivery.event_type, WebhookDelivery.payload).where(
                WebhookDelivery.turn_id == uuid.UUID(turn_id(frames))
            )
        )
        payloads = {(row.event_type, row.payload) for row in rows}
    assert {kind for kind, _ in payloads} == set(subscribed)
    assert any(GUARDED in payload for _, payload in payloads)
    assert_clean("\n".join(payload for _, payload in payloads))
