"""Steps shared by the governance tests: run a turn, pick events out of it, read rows by turn."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import Row, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Approval, PolicyDecision, TenantPolicy, ToolExecution, Usage
from app.models.base import utcnow
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, read_turn

BATCH_ABC = {
    "tool_calls": [
        {"name": "echo", "arguments": {"text": "A"}},
        {"name": "calculator", "arguments": {"expression": "6*7"}},
        {"name": "echo", "arguments": {"text": "C"}},
    ]
}
"""A (allowed), B (gated by GATE_CALCULATOR), C (allowed): ids call_0_0, call_0_1, call_0_2."""
A, B, C = "call_0_0", "call_0_1", "call_0_2"
GATE_CALCULATOR = {
    "id": "calc-needs-human",
    "point": "tool",
    "tool": "calculator",
    "verdict": "requires_approval",
    "reason": "arithmetic needs a human",
}
JSON = {"Accept": "application/json"}


def gated_config(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """Batch A, B, C with B gated, then the final answer "all done" (or the given steps)."""
    extra.setdefault("policies", [GATE_CALCULATOR])
    return scripted_config(*(steps or (BATCH_ABC, {"text": "all done"})), **extra)


async def open_session(client: httpx.AsyncClient, headers: dict[str, str], config: dict[str, Any]) -> dict[str, Any]:
    agent = await create_agent(client, headers, config)
    return await create_session(client, headers, agent["id"])


async def start_turn(
    client: httpx.AsyncClient, headers: dict[str, str], session: dict[str, Any], text: str = "go"
) -> list[Frame]:
    url = f"/sessions/{session['id']}/turns"
    return await read_turn(client, "POST", url, json={"input": text}, headers=headers)


async def run_turn(
    client: httpx.AsyncClient, headers: dict[str, str], config: dict[str, Any], text: str = "go"
) -> tuple[dict[str, Any], list[Frame]]:
    session = await open_session(client, headers, config)
    return session, await start_turn(client, headers, session, text)


def events(frames: list[Frame], event_type: str) -> list[dict[str, Any]]:
    return [f.data for f in frames if f.event == event_type]


def results(frames: list[Frame]) -> list[str]:
    return [e["result"] for e in events(frames, "tool_call.completed")]


def approval_ids(frames: list[Frame]) -> list[str]:
    return [e["approval_id"] for e in events(frames, "approval.required")]


def ended(frames: list[Frame]) -> dict[str, Any]:
    assert frames[-1].event == "turn.ended"
    return frames[-1].data


def turn_id(frames: list[Frame]) -> str:
    return str(frames[0].data["turn_id"])


async def decide(
    client: httpx.AsyncClient, headers: dict[str, str], approval_id: str, decision: str = "approve", **body: Any
) -> list[Frame]:
    """Decide one approval that resumes the turn; the resumed stream, read to its end."""
    url = f"/approvals/{approval_id}"
    return await read_turn(client, "POST", url, json={"decision": decision, **body}, headers=headers)


async def ledger(sql: AsyncEngine, turn: str) -> list[Row[Any]]:
    stmt = (
        select(
            ToolExecution.id,
            ToolExecution.tool_call_id,
            ToolExecution.arguments,
            ToolExecution.result,
            ToolExecution.is_error,
            ToolExecution.created_at,
        )
        .where(ToolExecution.turn_id == uuid.UUID(turn))
        .order_by(ToolExecution.created_at, ToolExecution.tool_call_id)
    )
    async with sql.connect() as conn:
        return list(await conn.execute(stmt))


async def receipts(sql: AsyncEngine, turn: str) -> list[Row[Any]]:
    stmt = (
        select(
            PolicyDecision.point,
            PolicyDecision.tool_call_id,
            PolicyDecision.verdict,
            PolicyDecision.rule_id,
            PolicyDecision.policy_hash,
        )
        .where(PolicyDecision.turn_id == uuid.UUID(turn))
        .order_by(PolicyDecision.created_at, PolicyDecision.id)
    )
    async with sql.connect() as conn:
        return list(await conn.execute(stmt))


async def approval_created_at(sql: AsyncEngine, approval_id: str) -> Any:
    async with sql.connect() as conn:
        return await conn.scalar(select(Approval.created_at).where(Approval.id == uuid.UUID(approval_id)))


async def usage_rows(sql: AsyncEngine, turn: str) -> int:
    async with sql.connect() as conn:
        return len(list(await conn.execute(select(Usage.id).where(Usage.turn_id == uuid.UUID(turn)))))


async def put_raw_tenant_policies(sql: AsyncEngine, tenant: str, policies: list[Any], version: int = 1) -> None:
    """Write a tenant policy version straight to the table, bypassing the API's validation."""
    async with sql.begin() as conn:
        await conn.execute(
            insert(TenantPolicy).values(
                id=uuid.uuid4(),
                tenant_id=tenant,
                version=version,
                policies=policies,
                policy_hash="0" * 64,
                created_by="test",
                created_at=utcnow(),
            )
        )
