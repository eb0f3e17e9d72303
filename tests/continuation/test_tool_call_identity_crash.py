"""A call id of ours survives a crash: an OpenAI-compatible server sends a call without an id, the call gets
one of ours when the reply arrives, and when the replica dies while the call is out at the gateway, the
replica that continues the turn reads the id back from the stored reply and re-sends the call under the
key the first send used (docs/decisions.md "A tool call's identity")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.tools.ledger_keys import idempotency_key
from tests.conftest import TokenFactory
from tests.continuation.support import TEAM, Follower, Out, drop_rule, kill_while_out, one_ending, results, resumed_on_b
from tests.factories import create_agent, create_session
from tests.idempotent_gateway import TOOL, IdempotentGateway
from tests.live_server import LiveServer
from tests.llm_servers import LlmServer, llm_server
from tests.providers import openai_wire

pytestmark = pytest.mark.timeout(180)

KEY = "sk-test-crash-identity-KEY-0123456789"


def _id_less(_: dict[str, Any], answered: bool) -> list[bytes]:
    """One call of the gateway's tool without an id; "filed" once its result is in."""
    if answered:
        chunks = [*openai_wire.text_chunks("filed"), openai_wire.chunk(finish="stop")]
    else:
        call = openai_wire.tool_fragment(0, name=TOOL, args='{"title": "held"}')
        chunks = [*openai_wire.text_chunks("Filing."), call, openai_wire.chunk(finish="tool_calls")]
    return [openai_wire.sse([*chunks, openai_wire.usage_chunk(25, 9)])]


@pytest.fixture
async def model() -> AsyncIterator[LlmServer]:
    async with llm_server("openai", _id_less) as server:
        yield server


async def test_a_call_with_an_id_of_ours_out_when_its_replica_dies_is_re_sent_under_the_same_key(
    replicas: list[LiveServer],
    clients: list[httpx.AsyncClient],
    tenant: str,
    auth_headers: TokenFactory,
    gateway: IdempotentGateway,
    model: LlmServer,
) -> None:
    (a, _), (on_a, on_b) = replicas, clients
    admin = auth_headers(tenant, "root", roles=["admin"])
    credential = {"provider": "openai", "api_key": KEY, "base_url": model.url}
    assert (await on_a.put("/credentials/openai", json=credential, headers=admin)).status_code == 201
    config = {
        "model": {"provider": "openai", "name": "llama3.1:8b", "max_tokens": 200},
        "tools": ["mcp:github"], "context": {"team_unit": TEAM},
    }  # fmt: skip
    session = await create_session(on_a, admin, (await create_agent(on_a, admin, config))["id"])
    held = Out(gateway, "held")
    follower = Follower(on_a, "POST", f"/sessions/{session['id']}/turns", json={"input": "file it"}, headers=admin)

    rest = await kill_while_out(a, follower, on_b, admin, held)  # the survivor re-sent it under `held.key`

    resumed_on_b(follower, rest)
    view = drop_rule(follower.frames + rest.frames)
    assert one_ending(view)["status"] == "completed"
    [requested] = [f.data for f in view if f.event == "tool_call.requested"]
    call_id = requested["tool_call_id"]
    assert call_id.startswith("call_")
    assert len(call_id) == 37, "an id of ours: the server sent none"
    assert held.key == idempotency_key(session["id"], follower.turn_id, call_id)
    re_sent = [r for r in gateway.gateway.rpc("tools/call") if r.idempotency_key == held.key]
    assert [r.tool_arguments for r in re_sent] == [{"title": "held"}, {"title": "held"}]
    assert gateway.effects.per_key() == {held.key: 1}
    assert results(view) == {call_id: "created issue: held"}
    sent_back = model.requests[-1].body["messages"]
    assert [c["id"] for c in sent_back[-2]["tool_calls"]] == [call_id]
    assert sent_back[-1]["tool_call_id"] == call_id
