"""The one place a `TurnRun` is built: a new turn, a queued turn that starts, a turn resumed by its
human decisions, a turn continued after its run was lost.

Each reads what it needs from the turn's row as stored (`RUN_COLUMNS`) and from its session (as
`TurnStore.session_for_turn` reads it); what differs is where the run picks up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.providers.base import ChatMessage
from app.runtime.port.journal import Continued, HumanDecision, Supersedes, TurnIdentity, TurnRun
from app.runtime.store.admission import Admission
from app.runtime.store.claims import Claimed, ClaimStore
from app.runtime.store.quota import token_quota_of
from app.runtime.store.read_ahead import start_reads_of
from app.runtime.store.status import SEQ_BLOCK
from app.runtime.store.turns import TurnStore


def run_of(
    ident: TurnIdentity, session: Mapping[str, Any], turn: Mapping[str, Any], history: list[ChatMessage], **picks: Any
) -> TurnRun:
    """A run of the turn `turn` (a row with `RUN_COLUMNS`) in `session`; `picks`: where it picks up."""
    return TurnRun(
        ident=ident,
        agent_version=session["agent_version"],
        owner_sub=turn["owner_sub"],
        snapshot=session["snapshot"],
        input=turn["input"],
        history=history,
        max_loops=turn["max_loops"],
        max_output_tokens=turn["max_output_tokens"],
        max_total_tokens=turn["max_total_tokens"],
        token_quota=token_quota_of(Admission.of(session).ceilings),
        mode=turn["mode"],
        max_steps=turn["max_steps"] or 0,
        output_schema=turn["output_schema"],
        start_reads=start_reads_of(session),
        **picks,
    )


def started_run(
    ident: TurnIdentity,
    session: Mapping[str, Any],
    turn: Mapping[str, Any],
    history: list[ChatMessage],
    supersedes: Supersedes | None = None,
) -> TurnRun:
    """A turn that starts now (new, or queued until now): from the beginning, with its first block of ids;
    `supersedes`: the answer it replaces (a regenerate)."""
    return run_of(ident, session, turn, history, seq_ceiling=int(turn["seq_ceiling"]), supersedes=supersedes)


async def resumed_run(
    store: TurnStore, session: Mapping[str, Any], turn: Mapping[str, Any], decisions: dict[str, HumanDecision]
) -> TurnRun:
    """An interrupted turn whose decisions are all taken (`turn` as claimed): at the tool batch it stopped in."""
    ident = TurnIdentity(session["tenant_id"], session["id"], turn["id"], session["agent_id"])
    history = await store.history(ident.tenant_id, ident.session_id)
    assistant = next(m for m in reversed(history) if m.role == "assistant")
    return run_of(
        ident, session, turn, history,
        last_seq=max(int(turn["last_seq"]), await store.max_seq(ident.tenant_id, ident.turn_id)),
        seq_ceiling=int(turn["seq_ceiling"]),
        loop_count=turn["loop_count"], input_tokens=turn["input_tokens"], output_tokens=turn["output_tokens"],
        resumed_by=turn["resumed_by"], decisions=decisions, pending=list(assistant.tool_calls),
        last_text=assistant.content, plan_events=await _plan_events(store, ident, turn),
    )  # fmt: skip


async def continued_run(store: TurnStore, claims: ClaimStore, claimed: Claimed, session: Mapping[str, Any]) -> TurnRun:
    """A claimed turn whose run was lost, from what is stored: at the last stored step; event ids go on
    above everything the lost run may have shown (app/runtime/store/claims.py)."""
    turn = claimed.row
    ident = TurnIdentity(claimed.orphan.tenant_id, claimed.session_id, claimed.orphan.turn_id, session["agent_id"])
    messages = await claims.turn_messages(ident)
    input_tokens, output_tokens = await claims.turn_usage(ident)
    last = messages[-1] if messages else None
    stopped_at = last if last is not None and last.role == "assistant" else None
    ceiling = int(turn["seq_ceiling"])
    return run_of(
        ident, session, turn, await store.history(ident.tenant_id, ident.session_id),
        last_seq=ceiling - SEQ_BLOCK, seq_ceiling=ceiling, loop_count=loops_done(messages),
        input_tokens=input_tokens, output_tokens=output_tokens, decisions=await claims.decisions(ident),
        pending=list(stopped_at.tool_calls) if stopped_at is not None else [],
        last_text=stopped_at.content if stopped_at is not None else "",
        plan_events=await _plan_events(store, ident, turn),
        continued=Continued(
            claimed.reason, claimed.stored_seq, stored_events=await claims.stored_events(ident),
            input_judged=await claims.input_judged(ident),
        ),
    )  # fmt: skip


def loops_done(messages: Sequence[ChatMessage]) -> int:
    """Loops the turn completed: model replies with tool calls whose every result is stored."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return sum(
        1 for m in messages if m.role == "assistant" and m.tool_calls and all(c.id in answered for c in m.tool_calls)
    )


async def _plan_events(store: TurnStore, ident: TurnIdentity, turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    if turn["mode"] != "autonomous":
        return []
    return await store.plan_events(ident.tenant_id, ident.turn_id)
