"""The pre_llm point judges the whole turn before any model call; a deny reaches no provider."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.approvals.helpers import ended, events, run_turn, turn_id, usage_rows
from tests.factories import scripted_config

NO_SECRETS = {
    "id": "no-secrets",
    "point": "pre_llm",
    "input_regex": "(?i)password",
    "verdict": "deny",
    "reason": "inputs must not carry passwords",
}
SHORT_INPUTS = {"id": "short-inputs", "point": "pre_llm", "max_input_chars": 10, "verdict": "deny"}
ASK_FIRST = {"id": "ask-first", "point": "pre_llm", "input_regex": "delete", "verdict": "requires_approval"}


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        (NO_SECRETS, "my PassWord is hunter2"),
        (SHORT_INPUTS, "eleven char"),
        (ASK_FIRST, "delete everything"),
    ],
    ids=["input-regex", "max-input-chars", "requires-approval"],
)
async def test_pre_llm_rule_fails_the_turn_before_the_model_is_called(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str], rule: dict[str, Any], text: str
) -> None:
    session, frames = await run_turn(client, alice, scripted_config({"text": "never said"}, policies=[rule]), text)
    end = ended(frames)
    assert end["status"] == "failed"
    assert end["error"]["code"] == "policy_denied"
    assert end["usage"] == {"input_tokens": 0, "output_tokens": 0}
    decisions = events(frames, "policy.decision")
    assert [(d["point"], d["verdict"], d["rule_id"]) for d in decisions] == [("pre_llm", rule["verdict"], rule["id"])]
    assert events(frames, "message.delta") == []
    assert events(frames, "message.completed") == []
    assert events(frames, "usage") == []
    assert "call_llm" not in [e["node"] for e in events(frames, "node.started")]
    assert await usage_rows(sql, turn_id(frames)) == 0
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=alice)).json()["items"]
    assert [m["role"] for m in messages] == ["user"]
    turn = (await client.get(f"/turns/{turn_id(frames)}", headers=alice)).json()
    assert (turn["status"], turn["error"]["code"]) == ("failed", "policy_denied")


async def test_deny_reason_is_the_error_message(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    _, frames = await run_turn(client, alice, scripted_config(policies=[NO_SECRETS]), "password please")
    assert ended(frames)["error"]["message"] == "inputs must not carry passwords"


@pytest.mark.parametrize("text", ["ten chars!", "hello"])
async def test_inputs_within_the_limit_reach_the_model(
    client: httpx.AsyncClient, sql: AsyncEngine, alice: dict[str, str], text: str
) -> None:
    _, frames = await run_turn(client, alice, scripted_config({"text": "said"}, policies=[SHORT_INPUTS]), text)
    assert ended(frames)["status"] == "completed"
    decisions = events(frames, "policy.decision")
    assert [(d["point"], d["verdict"], d["rule_id"]) for d in decisions] == [("pre_llm", "allow", None)]
    assert await usage_rows(sql, turn_id(frames)) == 1
