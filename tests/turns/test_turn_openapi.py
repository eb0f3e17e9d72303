"""The SSE operations publish typed events: text/event-stream with the TurnEvent union under components."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.runtime.port.events import TURN_EVENT_ADAPTER
from app.settings import Settings
from tests.sse import read_turn
from tests.turns.support import scripted_session

EVENT_REF = "#/components/schemas/TurnEvent"
FRAME_REF = "#/components/schemas/TurnEventFrame"
SSE = "text/event-stream"


@pytest.fixture(scope="module")
def spec(settings: Settings) -> dict[str, Any]:
    from app.main import create_app

    return create_app(settings).openapi()


def _ok_content(spec: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    content: dict[str, Any] = spec["paths"][path][method]["responses"]["200"]["content"]
    return content


@pytest.mark.parametrize(
    ("path", "method"), [("/sessions/{session_id}/turns", "post"), ("/turns/{turn_id}/events", "get")]
)
def test_sse_operations_document_event_stream_with_the_turn_event_union_as_each_events_data(
    spec: dict[str, Any], path: str, method: str
) -> None:
    assert _ok_content(spec, path, method)[SSE]["schema"] == {"$ref": FRAME_REF}
    frame = spec["components"]["schemas"]["TurnEventFrame"]
    assert frame["required"] == ["id", "event", "data"]
    assert frame["properties"]["data"]["contentMediaType"] == "application/json"
    assert frame["properties"]["data"]["contentSchema"] == {"$ref": EVENT_REF}


def test_create_turn_also_documents_the_finished_turn_as_json(spec: dict[str, Any]) -> None:
    content = _ok_content(spec, "/sessions/{session_id}/turns", "post")
    assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/Turn"}


def test_event_replay_documents_only_the_event_stream(spec: dict[str, Any]) -> None:
    assert set(_ok_content(spec, "/turns/{turn_id}/events", "get")) == {SSE}


def test_turn_event_is_a_union_discriminated_on_type(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    union = schemas["TurnEvent"]
    assert union["discriminator"]["propertyName"] == "type"
    refs = {item["$ref"] for item in union["oneOf"]}
    mapping = union["discriminator"]["mapping"]
    assert set(mapping.values()) == refs
    assert mapping["turn.ended"] == "#/components/schemas/TurnEnded"
    assert mapping["message.delta"] == "#/components/schemas/MessageDelta"
    for ref in refs:
        assert ref.removeprefix("#/components/schemas/") in schemas, ref


def test_every_design_event_type_is_in_the_union(spec: dict[str, Any]) -> None:
    mapping = spec["components"]["schemas"]["TurnEvent"]["discriminator"]["mapping"]
    assert set(mapping) == {
        "turn.started",
        "node.started",
        "node.ended",
        "message.delta",
        "message.completed",
        "tool_call.requested",
        "policy.decision",
        "tool_call.completed",
        "approval.required",
        "context.degraded",
        "context.compacted",
        "usage",
        "plan.created",
        "plan.step.started",
        "plan.step.completed",
        "turn.ended",
        "turn.resumed",
    }


def test_event_schemas_require_the_common_fields_and_their_own(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    ended = schemas["TurnEnded"]
    assert {"turn_id", "seq", "type", "status", "final_output", "usage", "loop_count", "error"} <= set(
        ended["required"]
    )
    assert ended["properties"]["type"].get("const") == "turn.ended"
    delta = schemas["MessageDelta"]
    assert {"turn_id", "seq", "type", "text"} <= set(delta["required"])
    assert "$ref" in str(ended["properties"]["usage"])


async def test_every_streamed_event_validates_against_the_published_union(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    calc = {"text": "let me see", "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}
    session = await scripted_session(client, alice, calc, {"text": "4"})
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
    for frame in frames:
        event = TURN_EVENT_ADAPTER.validate_python(frame.data)
        assert event.type == frame.event
        assert frame.data["seq"] == frame.id
        assert frame.data["turn_id"] == frames[0].data["turn_id"]
        assert list(frame.data) == ["turn_id", "seq", *type(event).model_fields], "the envelope, then the model"
    assert {f.event for f in frames} >= {
        "turn.started",
        "node.started",
        "node.ended",
        "message.delta",
        "message.completed",
        "usage",
        "tool_call.requested",
        "policy.decision",
        "tool_call.completed",
        "turn.ended",
    }
