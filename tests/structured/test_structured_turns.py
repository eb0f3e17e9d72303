"""Structured turns through the API, on PostgreSQL and SQLite: the answer parsed and validated by us,
one repair, `output_invalid`, and the schemas refused at create time."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.approvals.helpers import ended, events
from tests.autonomy.support import AUTONOMY, plan
from tests.conftest import TokenFactory
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
ANSWER = {"city": "Oslo", "population": 709000}


async def structured_session(client: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any],
                             **config: Any) -> dict[str, Any]:  # fmt: skip
    agent = await create_agent(client, headers, scripted_config(*steps, **config))
    return await create_session(client, headers, agent["id"])


async def test_a_structured_turn_ends_with_the_parsed_object_on_the_event_and_the_turn(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    text = json.dumps(ANSWER)
    session = await structured_session(any_backend, alice, {"text": text}, output_schema=SCHEMA)

    frames = await read_turn(any_backend, "POST", f"/sessions/{session['id']}/turns", json={"input": "Oslo?"},
                             headers=alice)  # fmt: skip

    closing = ended(frames)
    assert closing["status"] == "completed"
    assert closing["output"] == ANSWER
    assert closing["final_output"] == text
    assert "".join(e["text"] for e in events(frames, "message.delta")) == text
    turn = (await any_backend.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert turn["output"] == ANSWER


async def test_the_turn_requests_schema_wins_over_the_agents(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    other = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    session = await structured_session(any_backend, alice, {"text": '{"n": 3}'}, output_schema=SCHEMA)

    as_json = {**alice, "Accept": "application/json"}
    response = await any_backend.post(f"/sessions/{session['id']}/turns", headers=as_json,
                                      json={"input": "n?", "output_schema": other})  # fmt: skip

    assert response.status_code == 200, response.text
    assert response.json()["status"] == "completed"
    assert response.json()["output"] == {"n": 3}


async def test_an_answer_that_misses_the_schema_is_repaired_once_with_the_errors_in_the_prompt(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await structured_session(
        any_backend, alice, {"text": '{"city": "Oslo"}'}, {"text": json.dumps(ANSWER)}, output_schema=SCHEMA
    )

    frames = await read_turn(any_backend, "POST", f"/sessions/{session['id']}/turns", json={"input": "Oslo?"},
                             headers=alice)  # fmt: skip

    assert ended(frames)["status"] == "completed", ended(frames)
    assert ended(frames)["output"] == ANSWER
    assert [e["text"] for e in events(frames, "message.completed")] == ['{"city": "Oslo"}', json.dumps(ANSWER)]


async def test_an_answer_still_invalid_after_the_repair_ends_the_turn_output_invalid(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await structured_session(any_backend, alice, {"text": "Oslo has about 709k people."},
                                       output_schema=SCHEMA)  # fmt: skip

    frames = await read_turn(any_backend, "POST", f"/sessions/{session['id']}/turns", json={"input": "Oslo?"},
                             headers=alice)  # fmt: skip

    closing = ended(frames)
    assert closing["status"] == "failed"
    assert closing["output"] is None
    assert closing["error"]["code"] == "output_invalid"
    assert closing["error"]["raw"] == "Oslo has about 709k people."
    assert closing["error"]["errors"][0].startswith("the answer is not JSON")
    assert len(events(frames, "message.completed")) == 2
    turn = (await any_backend.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert turn["error"]["code"] == "output_invalid"


async def test_an_invalid_schema_is_refused_at_create_time_naming_the_problem(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    config = scripted_config(output_schema={"type": "object", "properties": {"a": {"type": 5}}})
    agent = await any_backend.post("/agents", json={"name": "bad", "config": config}, headers=alice)
    assert agent.status_code == 422
    assert agent.headers["content-type"].startswith("application/problem+json")
    assert agent.json()["code"] == "invalid_output_schema"
    assert "properties/a/type" in agent.json()["detail"]

    session = await structured_session(any_backend, alice, {"text": "hi"})
    turn = await any_backend.post(f"/sessions/{session['id']}/turns", headers=alice,
                                  json={"input": "x", "output_schema": {"type": "array"}})  # fmt: skip
    assert turn.status_code == 422
    assert turn.json()["code"] == "invalid_output_schema"
    assert '"type": "object" at the top' in turn.json()["detail"]


async def test_the_claude_sdk_runtime_refuses_an_output_schema_at_create_time(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    admin = auth_headers(tenant, "root", roles=["admin"])
    config = {"model": {"provider": "anthropic", "name": "claude-sonnet-4-5"}, "runtime": "claude_sdk"}
    refused = await any_backend.post("/agents", json={"name": "c", "config": {**config, "output_schema": SCHEMA}},
                                     headers=admin)  # fmt: skip
    assert refused.status_code == 422
    assert refused.json()["code"] == "output_schema_unsupported"

    agent = await create_agent(any_backend, admin, config)
    session = await create_session(any_backend, admin, agent["id"])
    turn = await any_backend.post(f"/sessions/{session['id']}/turns", headers=admin,
                                  json={"input": "x", "output_schema": SCHEMA})  # fmt: skip
    assert turn.status_code == 422
    assert turn.json()["code"] == "output_schema_unsupported"


async def test_an_autonomous_turn_validates_its_closing_summary_against_the_schema(
    any_backend: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    steps = [plan("look it up"), {"text": "Oslo, 709000"}, {"text": "Oslo it is."}, {"text": json.dumps(ANSWER)}]
    agent = await create_agent(any_backend, alice, scripted_config(*steps, autonomy=AUTONOMY, output_schema=SCHEMA))
    session = await create_session(any_backend, alice, agent["id"])

    frames = await read_turn(any_backend, "POST", f"/sessions/{session['id']}/turns", headers=alice,
                             json={"input": "Oslo?", "mode": "autonomous"})  # fmt: skip

    closing = ended(frames)
    assert closing["status"] == "completed", closing
    assert closing["output"] == ANSWER
    assert [e["output"] for e in events(frames, "plan.step.completed")] == ["Oslo, 709000"]
    assert [e["text"] for e in events(frames, "message.completed")][-2:] == ["Oslo it is.", json.dumps(ANSWER)]
