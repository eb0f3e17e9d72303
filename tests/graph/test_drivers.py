"""`GRAPH_DRIVER`: the loop stepped directly and the compiled `StateGraph` run by Pregel give the same turns.

Each scenario runs once on an app of each driver (the same PostgreSQL database); the streams must
match event for event, with the ids that differ by construction left out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.graph.build import ROUTED
from app.graph.loop import successor
from app.graph.state import TurnState
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, read_turn

DRIVERS = ("direct", "pregel")
VARYING = {"turn_id", "session_id", "agent_id", "approval_id", "resumed_by", "receipt_id", "decision_id", "ts"}
"""Fields that name this run's rows (new in each app) or its clock."""
ECHO_THEN_TEXT = ({"tool_calls": [{"name": "echo", "arguments": {"text": "A"}}]}, {"text": "done"})
GATED = {"id": "calc-human", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}
DENY_INPUT = {"id": "no-secrets", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"}


@pytest.fixture(scope="module")
async def clients(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    folders = {driver: Path(tmp_path_factory.mktemp(driver)) for driver in DRIVERS}
    direct = make_settings(database_url, folders["direct"], graph_driver="direct")
    pregel = make_settings(database_url, folders["pregel"], graph_driver="pregel")
    async with running_app(direct) as (_, on_direct), running_app(pregel) as (_, on_pregel):
        yield {"direct": on_direct, "pregel": on_pregel}


def comparable(frames: list[Frame]) -> list[tuple[str, dict[str, Any]]]:
    return [(f.event, {k: v for k, v in f.data.items() if k not in VARYING and "duration" not in k}) for f in frames]


async def turn_on(
    client: httpx.AsyncClient, headers: dict[str, str], config: dict[str, Any], text: str = "go"
) -> list[Frame]:
    agent = await create_agent(client, headers, config)
    session = await create_session(client, headers, agent["id"])
    return await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": text}, headers=headers)


async def both(
    clients: dict[str, httpx.AsyncClient], headers: dict[str, str], config: dict[str, Any], text: str = "go"
) -> dict[str, list[Frame]]:
    return {driver: await turn_on(client, headers, config, text) for driver, client in clients.items()}


def ended(frames: list[Frame]) -> dict[str, Any]:
    assert frames[-1].event == "turn.ended"
    return frames[-1].data


@pytest.mark.parametrize(
    ("config", "text", "status"),
    [
        (scripted_config({"text": "hello there"}), "go", "completed"),
        (scripted_config(*ECHO_THEN_TEXT), "go", "completed"),
        (scripted_config(*ECHO_THEN_TEXT, limits={"max_loops": 1}), "go", "loop_limit"),
        (scripted_config(policies=[DENY_INPUT]), "my password", "failed"),
    ],
    ids=["text", "tool", "loop_limit", "input_denied"],
)
async def test_both_drivers_stream_the_same_turn(
    clients: dict[str, httpx.AsyncClient], alice: dict[str, str], config: dict[str, Any], text: str, status: str
) -> None:
    runs = await both(clients, alice, config, text)
    assert ended(runs["direct"])["status"] == status
    assert comparable(runs["direct"]) == comparable(runs["pregel"])


async def test_both_drivers_interrupt_and_resume_at_the_same_call(
    clients: dict[str, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    batch = {
        "tool_calls": [
            {"name": "echo", "arguments": {"text": "A"}},
            {"name": "calculator", "arguments": {"expression": "6*7"}},
        ]
    }
    config = scripted_config(batch, {"text": "all done"}, policies=[GATED])
    runs = await both(clients, alice, config)
    resumed: dict[str, list[Frame]] = {}
    for driver, client in clients.items():
        assert ended(runs[driver])["status"] == "interrupted"
        approval = next(f.data["approval_id"] for f in runs[driver] if f.event == "approval.required")
        resumed[driver] = await read_turn(
            client, "POST", f"/approvals/{approval}", json={"decision": "approve"}, headers=alice
        )
    assert comparable(runs["direct"]) == comparable(runs["pregel"])
    assert ended(resumed["direct"])["status"] == "completed"
    assert comparable(resumed["direct"]) == comparable(resumed["pregel"])


def test_a_route_outside_its_declared_targets_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The direct driver keeps the declared graph's promise: an edge the graph does not have is never taken."""
    state: TurnState = {"input": "x", "max_loops": 1, "status": "completed", "loop_count": 0}
    assert successor("ingest_result", state) == "__end__"
    assert successor("call_llm", state) == "parse_response"
    _, targets = ROUTED["ingest_result"]
    monkeypatch.setitem(ROUTED, "ingest_result", (lambda _: "call_llm", targets))
    with pytest.raises(ValueError, match="not one of"):
        successor("ingest_result", state)
