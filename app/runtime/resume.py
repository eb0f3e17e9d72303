"""Rebuild a turn's run from the database, to continue it exactly at the batch it stopped in."""

from __future__ import annotations

import uuid

from app.models import Approval, Session, Turn
from app.runtime.port.journal import HumanDecision, TokenQuota, TurnIdentity, TurnRun
from app.runtime.store.turns import TurnStore


def human_decision(approval: Approval) -> HumanDecision:
    """A decided approval as the run that honours it gets it."""
    return {
        "approval_id": str(approval.id),
        "decision": "approve" if approval.status == "approved" else "deny",
        "reason": approval.decision_reason,
        "arguments": approval.edited_arguments,
        "decided_by": approval.decided_by,
        "rule_id": approval.rule_id,
    }


async def resume_run(
    store: TurnStore,
    turn: Turn,
    session: Session,
    approval_id: uuid.UUID,
    decisions: dict[str, HumanDecision],
    *,
    token_quota: TokenQuota | None = None,
) -> TurnRun:
    history = await store.history(turn.tenant_id, turn.session_id)
    assistant = next(m for m in reversed(history) if m.role == "assistant")
    last_seq = max(turn.last_seq, await store.max_seq(turn.tenant_id, turn.id))
    return TurnRun(
        ident=TurnIdentity(turn.tenant_id, turn.session_id, turn.id, session.agent_id),
        agent_version=session.agent_version,
        owner_sub=turn.owner_sub,
        snapshot=session.snapshot,
        input=turn.input,
        max_loops=turn.max_loops,
        max_output_tokens=turn.max_output_tokens,
        max_total_tokens=turn.max_total_tokens,
        token_quota=token_quota,
        last_seq=last_seq,
        seq_ceiling=turn.seq_ceiling,
        loop_count=turn.loop_count,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        resumed_by=approval_id,
        decisions=decisions,
        history=history,
        pending=list(assistant.tool_calls),
        last_text=assistant.content,
        mode=turn.mode,
        max_steps=turn.max_steps or 0,
        plan_events=await store.plan_events(turn.tenant_id, turn.id) if turn.mode == "autonomous" else [],
    )
