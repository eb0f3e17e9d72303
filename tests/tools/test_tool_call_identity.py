"""A tool call's identity (docs/decisions.md "A tool call's identity"): every logical call is judged and run,
whatever ids its provider sends.

Each provider's wire format, on a loopback server whose model calls `echo` with the user's words and then
answers "tool said: <the results it was sent>". Two turns of one session ask for `echo` with different
words; the ids are the provider's usual ones repeated in every reply, none, empty ones, or one id twice
in a reply. Both turns' calls must be judged (`policy.decision` and a receipt), run
(`tool_call.completed`, a ledger row each), and the second turn's model must be sent the second
result. Also: the scripted provider's ids after a `rollback`, and an autonomous turn whose steps'
calls share one id. On PostgreSQL and SQLite.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from app.models import PolicyDecision, ToolExecution
from app.settings import AnthropicSettings, GeminiSettings, OpenAISettings, ProviderSettings
from app.tools.ledger_keys import idempotency_key
from tests.approvals.helpers import ended, events
from tests.conftest import TokenFactory, make_settings, running_app
from tests.engines import direct_engine
from tests.factories import create_agent, create_session, scripted_config
from tests.llm_servers import anthropic_reply, llm_server
from tests.providers import gemini_wire, openai_wire
from tests.sse import Frame, read_turn

MODELS = {"openai": "llama3.1:8b", "gemini": "gemini-2.5-flash", "anthropic": "claude-sonnet-4-5"}
KEY = "sk-test-identity-KEY-0123456789abcdef"
MAX_ID_LENGTH = 40
"""OpenAI's limit on a tool call id; Anthropic's pattern is `ID_CHARACTERS`."""
ID_CHARACTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True)
class Backend:
    url: str
    client: httpx.AsyncClient


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
async def backend(
    request: pytest.FixtureRequest, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Backend]:
    """The service on the test database or on a SQLite file, allowed to reach loopback model servers."""
    folder = tmp_path_factory.mktemp("identity")
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{folder / 'identity.db'}"
    settings = make_settings(
        url,
        folder,
        providers=ProviderSettings(allowed_hosts=["127.0.0.1"]),
        openai=OpenAISettings(api_key=KEY, max_retries=0),
        gemini=GeminiSettings(api_key=KEY, max_retries=0),
        anthropic=AnthropicSettings(api_key=KEY, max_retries=0),
    )
    async with running_app(settings) as (_, client):
        yield Backend(url, client)


@pytest.fixture
def admin(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


# --- the loopback model: echo the user's words, then say what the tool said -----------------------


@dataclass(frozen=True)
class Conversation:
    """What a request tells the model: the latest user words, and the tool results sent after them."""

    said: str
    results: list[str]


def _openai_conversation(body: dict[str, Any]) -> Conversation:
    messages = body["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    results = [m["content"] for m in messages[last + 1 :] if m["role"] == "tool"]
    return Conversation(messages[last]["content"], results)


def _anthropic_conversation(body: dict[str, Any]) -> Conversation:
    said, results = "", []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        if texts:
            said, results = "".join(texts), []
        for block in blocks:
            if block["type"] == "tool_result":
                inner = block["content"]
                results.append(inner if isinstance(inner, str) else "".join(part["text"] for part in inner))
    return Conversation(said, results)


def _gemini_conversation(body: dict[str, Any]) -> Conversation:
    said, results = "", []
    for content in body["contents"]:
        if content["role"] != "user":
            continue
        texts = [p["text"] for p in content["parts"] if "text" in p]
        if texts:
            said, results = "".join(texts), []
        results += [p["functionResponse"]["response"]["result"] for p in content["parts"] if "functionResponse" in p]
    return Conversation(said, results)


CONVERSATIONS = {"openai": _openai_conversation, "anthropic": _anthropic_conversation, "gemini": _gemini_conversation}
IDS = {
    "anthropic": {"repeated": "toolu_echo_1"},
    "openai": {"repeated": "call_0", "missing": None, "empty": "", "twice in a reply": "call_dup"},
    "gemini": {"repeated": "fc_echo_1", "missing": None},
}
"""Per provider, how its server names calls: the same id in every reply, none, an empty one, one id twice in a reply."""
CASES = [(provider, ids) for provider, kinds in IDS.items() for ids in kinds]


def _asked(conversation: Conversation, ids: str) -> list[str]:
    """The words the model asks `echo` to say: one call, or two sharing an id."""
    if ids == "twice in a reply":
        return [f"{conversation.said} 1", f"{conversation.said} 2"]
    return [conversation.said]


def _model(provider: str, ids: str) -> Any:
    call_id = IDS[provider][ids]

    def answer(body: dict[str, Any], _: bool) -> list[bytes]:
        conversation = CONVERSATIONS[provider](body)
        final = f"tool said: {' | '.join(conversation.results)}" if conversation.results else None
        words = _asked(conversation, ids)
        if provider == "openai":
            if final is not None:
                chunks = [*openai_wire.text_chunks(final), openai_wire.chunk(finish="stop")]
            else:
                calls = [
                    openai_wire.tool_fragment(i, call_id=call_id, name="echo", args=json.dumps({"text": w}))
                    for i, w in enumerate(words)
                ]
                chunks = [*openai_wire.text_chunks("Calling."), *calls, openai_wire.chunk(finish="tool_calls")]
            return [openai_wire.sse([*chunks, openai_wire.usage_chunk(25, 9)])]
        if provider == "gemini":
            if final is not None:
                parts = [gemini_wire.chunk(gemini_wire.text(final))]
            else:
                parts = [gemini_wire.chunk(*(gemini_wire.call("echo", {"text": w}, call_id) for w in words))]
            return [gemini_wire.sse([*parts, gemini_wire.chunk(finish="STOP", usage=(25, 9))])]
        if final is not None:
            return anthropic_reply(body, final, None)
        return anthropic_reply(body, "Calling.", {"text": words[0]}, call_id=str(call_id), tool="echo")

    return answer


async def _agent_session(client: httpx.AsyncClient, admin: dict[str, str], provider: str, url: str) -> dict[str, Any]:
    stored = await client.put(
        f"/credentials/{provider}", json={"provider": provider, "api_key": KEY, "base_url": url}, headers=admin
    )
    assert stored.status_code == 201, stored.text
    config = {"model": {"provider": provider, "name": MODELS[provider], "max_tokens": 200}, "tools": ["builtin:echo"]}
    agent = await create_agent(client, admin, config)
    return await create_session(client, admin, agent["id"])


async def _turn(client: httpx.AsyncClient, headers: dict[str, str], session: dict[str, Any], text: str) -> list[Frame]:
    return await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": text}, headers=headers)


# --- what every turn must show ----------------------------------------------------------------------


def judged_and_run(frames: list[Frame], said: list[str]) -> list[str]:
    """The turn's calls, in order, each asked for, judged and completed with what it was asked to say; their ids."""
    requested = events(frames, "tool_call.requested")
    assert [r["arguments"] for r in requested] == [{"text": s} for s in said]
    ids = [r["tool_call_id"] for r in requested]
    assert len(set(ids)) == len(ids)
    for call_id in ids:
        assert 0 < len(call_id) <= MAX_ID_LENGTH, call_id
        assert set(call_id) <= ID_CHARACTERS, call_id
    decided = [d["tool_call_id"] for d in events(frames, "policy.decision") if d["point"] == "tool"]
    assert decided == ids, "every call is judged"
    completed = events(frames, "tool_call.completed")
    assert [(c["tool_call_id"], c["result"], c["is_error"]) for c in completed] == [
        (i, s, False) for i, s in zip(ids, said, strict=True)
    ]
    return ids


async def ledger_and_receipts(url: str, session_id: str) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """The session's ledger rows (key, tool_call_id, result) and its tool receipts' tool_call_ids."""
    session = uuid.UUID(session_id)
    async with direct_engine(url) as engine, engine.connect() as conn:
        rows = await conn.execute(
            select(ToolExecution.idempotency_key, ToolExecution.tool_call_id, ToolExecution.result)
            .where(ToolExecution.session_id == session)
            .order_by(ToolExecution.created_at)
        )
        receipts = await conn.execute(
            select(PolicyDecision.tool_call_id).where(
                PolicyDecision.session_id == session, PolicyDecision.point == "tool"
            )
        )
        return [(r.idempotency_key, r.tool_call_id, r.result) for r in rows], [str(r[0]) for r in receipts]


@pytest.mark.parametrize(("provider", "ids"), CASES, ids=[f"{p}-{i}" for p, i in CASES])
async def test_two_turns_calling_the_same_tool_each_judge_and_run_their_own_call(
    backend: Backend, admin: dict[str, str], provider: str, ids: str
) -> None:
    client = backend.client
    async with llm_server(provider, _model(provider, ids)) as server:
        session = await _agent_session(client, admin, provider, server.url)
        first = await _turn(client, admin, session, "first")
        second = await _turn(client, admin, session, "second")

    said_first, said_second = (_asked(Conversation(w, []), ids) for w in ("first", "second"))
    for frames, said in ((first, said_first), (second, said_second)):
        answer = f"tool said: {' | '.join(said)}"
        assert (ended(frames)["status"], ended(frames)["final_output"]) == ("completed", answer)
    calls = judged_and_run(first, said_first) + judged_and_run(second, said_second)
    assert len(set(calls)) == len(calls), "no id names two calls of the session"
    last_request = CONVERSATIONS[provider](server.requests[-1].body)
    assert last_request.results == said_second, "the second turn's model is sent the second turn's results"
    ledger, receipts = await ledger_and_receipts(backend.url, session["id"])
    turns = [str(first[0].data["turn_id"])] * len(said_first) + [str(second[0].data["turn_id"])] * len(said_second)
    assert ledger == [
        (idempotency_key(session["id"], turn, call_id), call_id, said)
        for turn, call_id, said in zip(turns, calls, [*said_first, *said_second], strict=True)
    ]
    assert sorted(receipts) == sorted(calls)


async def test_ids_of_ours_are_stored_with_the_reply_and_sent_back_to_the_model(
    backend: Backend, admin: dict[str, str]
) -> None:
    """An id-less server's calls get ids of ours, which the conversation stores and the next request carries."""
    client = backend.client
    async with llm_server("openai", _model("openai", "missing")) as server:
        session = await _agent_session(client, admin, "openai", server.url)
        frames = await _turn(client, admin, session, "first")
    [call_id] = judged_and_run(frames, ["first"])
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=admin)).json()["items"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == [call_id]
    assert messages[2]["tool_call_id"] == call_id
    sent = server.requests[-1].body["messages"]
    assert [c["id"] for c in sent[-2]["tool_calls"]] == [call_id]
    assert sent[-1]["tool_call_id"] == call_id


# --- the scripted provider ------------------------------------------------------------------------


async def test_scripted_two_turns_calling_echo_each_judge_and_run_their_own_call(
    backend: Backend, admin: dict[str, str]
) -> None:
    client = backend.client
    steps = [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "first"}}]},
        {"text": "done first"},
        {"tool_calls": [{"name": "echo", "arguments": {"text": "second"}}]},
        {"text": "done second"},
    ]
    agent = await create_agent(client, admin, scripted_config(*steps, tools=["builtin:echo"]))
    session = await create_session(client, admin, agent["id"])
    first = await _turn(client, admin, session, "first")
    second = await _turn(client, admin, session, "second")

    calls = judged_and_run(first, ["first"]) + judged_and_run(second, ["second"])
    assert len(set(calls)) == 2
    ledger, receipts = await ledger_and_receipts(backend.url, session["id"])
    assert [(call_id, result) for _, call_id, result in ledger] == list(zip(calls, ["first", "second"], strict=True))
    assert sorted(receipts) == sorted(calls)


GATE_CALCULATOR = {"id": "calc", "point": "tool", "tool": "calculator", "verdict": "requires_approval"}


async def test_a_rolled_back_turns_script_played_again_judges_and_runs_its_calls_again(
    backend: Backend, admin: dict[str, str]
) -> None:
    """The rollback removes the first turn's messages, so the script replays with the same ids: the
    second turn's echo is a new call of its own, not the rolled-back turn's."""
    client = backend.client
    batch = {
        "tool_calls": [
            {"name": "echo", "arguments": {"text": "again"}},
            {"name": "calculator", "arguments": {"expression": "6*7"}},
        ]
    }
    config = scripted_config(batch, {"text": "done"}, tools=["builtin:echo", "builtin:calculator"])
    config["policies"] = [GATE_CALCULATOR]
    agent = await create_agent(client, admin, config)
    session = await create_session(client, admin, agent["id"])
    first = await _turn(client, admin, session, "go")
    assert ended(first)["status"] == "interrupted"
    url = f"/sessions/{session['id']}/turns"
    second = await read_turn(client, "POST", url, json={"input": "go", "multitask_strategy": "rollback"}, headers=admin)

    assert ended(second)["status"] == "interrupted"
    first_ids = [r["tool_call_id"] for r in events(first, "tool_call.requested")]
    second_ids = [r["tool_call_id"] for r in events(second, "tool_call.requested")]
    assert first_ids == second_ids, "the script replays its ids"
    decided = [d["tool_call_id"] for d in events(second, "policy.decision") if d["point"] == "tool"]
    assert decided == second_ids, "the replayed calls are judged again"
    assert [(c["tool_call_id"], c["result"]) for c in events(second, "tool_call.completed")] == [
        (second_ids[0], "again")
    ]
    ledger, _ = await ledger_and_receipts(backend.url, session["id"])
    assert [(key, result) for key, _, result in ledger] == [
        (idempotency_key(session["id"], str(first[0].data["turn_id"]), first_ids[0]), "again"),
        (idempotency_key(session["id"], str(second[0].data["turn_id"]), second_ids[0]), "again"),
    ]


# --- an autonomous turn whose steps' calls share an id ---------------------------------------------

PLAN = json.dumps({"todos": [{"title": "say one"}, {"title": "say two"}]})
SHARED_ID = "toolu_same"


def _autonomous_model(body: dict[str, Any], _: bool) -> list[bytes]:
    """The plan; per step an `echo` of the step's word under one shared id, then a sentence; the summary last."""
    system = json.dumps(body.get("system", ""))
    if "You are planning" in system:
        return anthropic_reply(body, PLAN, None)
    if "closing summary" in system:
        return anthropic_reply(body, "Said one, then two.", None)
    messages = [json.dumps(m) for m in body["messages"]]
    goal = max(i for i, m in enumerate(messages) if "Now do only this step:" in m)
    word = "two" if "this step: say two" in messages[goal] else "one"
    if any('"tool_result"' in m for m in messages[goal + 1 :]):
        return anthropic_reply(body, f"said {word}", None)
    return anthropic_reply(body, "saying", {"text": word}, call_id=SHARED_ID, tool="echo")


async def test_an_autonomous_turn_whose_steps_reuse_an_id_asks_and_runs_each_steps_call(
    backend: Backend, admin: dict[str, str]
) -> None:
    client = backend.client
    gate = {"id": "echo", "point": "tool", "tool": "echo", "verdict": "requires_approval"}
    async with llm_server("anthropic", _autonomous_model) as server:
        stored = await client.put(
            "/credentials/anthropic",
            json={"provider": "anthropic", "api_key": KEY, "base_url": server.url},
            headers=admin,
        )
        assert stored.status_code == 201, stored.text
        config = {
            "model": {"provider": "anthropic", "name": MODELS["anthropic"], "max_tokens": 200},
            "tools": ["builtin:echo"], "autonomy": {"enabled": True}, "policies": [gate],
        }  # fmt: skip
        agent = await create_agent(client, admin, config)
        session = await create_session(client, admin, agent["id"])
        url = f"/sessions/{session['id']}/turns"
        runs = [await read_turn(client, "POST", url, json={"input": "say one, then two", "mode": "autonomous"},
                                headers=admin)]  # fmt: skip
        while ended(runs[-1])["status"] == "interrupted":
            [waiting] = events(runs[-1], "approval.required")
            runs.append(
                await read_turn(
                    client, "POST", f"/approvals/{waiting['approval_id']}", json={"decision": "approve"}, headers=admin
                )
            )

    frames = [f for run in runs for f in run]
    assert (ended(runs[-1])["status"], ended(runs[-1])["final_output"]) == ("completed", "Said one, then two.")
    asked = [(a["tool_call_id"], a["arguments"]) for a in events(frames, "approval.required")]
    assert [arguments for _, arguments in asked] == [{"text": "one"}, {"text": "two"}]
    ids = [call_id for call_id, _ in asked]
    assert ids[0] == SHARED_ID
    assert ids[1] != SHARED_ID, "the second step's call gets an id of ours"
    completed = events(frames, "tool_call.completed")
    assert [(c["tool_call_id"], c["result"]) for c in completed] == list(zip(ids, ["one", "two"], strict=True))
    ledger, receipts = await ledger_and_receipts(backend.url, session["id"])
    assert [(call_id, result) for _, call_id, result in ledger] == list(zip(ids, ["one", "two"], strict=True))
    assert sorted(set(receipts)) == sorted(ids)
    answered = [c for r in server.requests if (c := _anthropic_conversation(r.body)).results]
    assert [c.results for c in answered if "this step: say two" in c.said] == [["two"]], "step two's model sees two"
