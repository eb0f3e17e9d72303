"""An adapter's run spans a hand-over: its follow was cut, it follows the turn again through the store.

The cut follow yields what the lost replica showed (tests/handover.py: stored events, then some
never stored); the store holds the continuation. The AG-UI translation of the whole is one run whose
`MESSAGES_SNAPSHOT` at `turn.resumed` leaves out everything the lost run showed of its first reply.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from app.adapters import ag_ui
from app.adapters.runs import AdapterRuns
from app.auth.principal import Principal
from app.main import create_app
from app.runtime.port.events import Followed, LoggedEvent
from app.settings import Settings
from tests.factories import create_agent, create_session
from tests.handover import TOOL_THEN_ANSWER, HandOver, HandOverApp
from tests.turns.loopback import serve_asgi


async def test_an_adapter_follows_a_cut_turn_through_the_store_into_its_continuation(
    settings: Settings, sql: AsyncEngine, tenant: str, alice: dict[str, str]
) -> None:
    app = create_app(settings)
    front = HandOverApp(app, sql, HandOver(durable=2, lost=13))
    async with serve_asgi(front, lifespan="on") as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            agent = await create_agent(client, alice, TOOL_THEN_ANSWER)
            session = await create_session(client, alice, agent["id"])
            await client.post(f"/sessions/{session['id']}/turns", json={"input": "echo?"}, headers=alice)
        assert front.result is not None
        shown, stored = front.result.shown, front.result.stored

        async def cut(after: int) -> AsyncIterator[Followed]:
            yield [LoggedEvent(e["seq"], e["type"], json.dumps(e)) for e in shown if e["seq"] > after]

        runs = AdapterRuns(app.state.container, Principal(sub="alice", tenant_id=tenant))
        turn_id = uuid.UUID(shown[0]["turn_id"])
        events = [e async for e in runs.through_hand_overs(turn_id, cut, 0)]
    resumed_at = next(i for i, e in enumerate(stored) if e["type"] == "turn.resumed")
    assert [e["seq"] for e in events] == [e["seq"] for e in shown] + [e["seq"] for e in stored[resumed_at:]]

    translator = ag_ui.AgUiRun(thread_id="t", run_id="r")
    out: list[dict[str, Any]] = [json.loads(ag_ui.encode(e).removeprefix(b"data: ")) for e in [
        *translator.started(), *(t for event in events for t in translator.translate(event))]]  # fmt: skip
    types = [e["type"] for e in out]
    assert types.count("RUN_STARTED") == 1
    assert types[-1] == "RUN_FINISHED"
    resumed = next(e for e in out if e["type"] == "CUSTOM" and e["name"] == "turn.resumed")
    lost_call = next(e["tool_call_id"] for e in shown if e["type"] == "tool_call.requested")
    assert lost_call in resumed["value"]["withdrawn_message_ids"]
    assert len(resumed["value"]["withdrawn_message_ids"]) == 3  # the first reply, its tool call, the result
    assert next(e for e in out if e["type"] == "MESSAGES_SNAPSHOT")["messages"] == []
