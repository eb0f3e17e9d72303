"""`POST /policies/simulate`: recorded inputs judged again with a draft of the tenant's policies.

The draft stands where the tenant's newest version would; each input is judged with it plus the
agent rules and tool blacklist of the configuration its session pinned, at the point it was judged
at, by the gate's own functions (app/governance/replay.py). Nothing is written, no model or tool is
called. The replay runs in batches in a worker thread (RE2 over thousands of inputs is CPU work)
and stops at a wall-clock cap, answering what it judged so far with `truncated: true`.

What a point replays: `pre_llm` receipts the turn's input, `tool` receipts the call's stored
arguments, every stored assistant reply (`output`) and every tool result the ledger holds
(`tool_result`, the real result, not what the model saw). A reply or a result that no rule acted on
left no receipt: its recorded verdict is `allow`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.governance.canonical import canonical_json, sha256_hex
from app.governance.policy import ENGINE_ERROR_RULE_ID, Point, PolicyRule, PolicySet, parse_rules
from app.governance.receipts import UNKNOWN_TOOL_RULE_ID
from app.governance.replay import Outcome, Recorded, outcome_of, rejudge
from app.models import PolicyDecision, Session
from app.policies import schemas
from app.policies.recorded_repository import RecordedReads

SIMULATION_TIME_CAP_SECONDS = 5.0
BATCH_SIZE = 250
CHANGED_SHOWN = 500
NOT_REPLAYED = {ENGINE_ERROR_RULE_ID: "engine_error", UNKNOWN_TOOL_RULE_ID: "unknown_tool"}
"""Receipts that judged no rule: an error stood in for the set, or the tool was not offered."""


@dataclass
class Unit:
    """One recorded decision to judge again."""

    at: datetime
    turn_id: uuid.UUID
    session_id: uuid.UUID
    point: Point
    decision_id: uuid.UUID | None = None
    message_id: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    text: str = ""
    recorded: Outcome | None = None
    skip: str | None = None
    recorded_input: Recorded | None = None


class PolicySimulation:
    def __init__(
        self,
        db: AsyncSession,
        principal: Principal,
        *,
        time_cap: float = SIMULATION_TIME_CAP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reads = RecordedReads(db, principal.tenant_id)
        self.time_cap = time_cap
        self.clock = clock

    async def run(self, request: schemas.SimulationRequest) -> schemas.SimulationResult:
        started = self.clock()
        units = await self._units(request)
        await self._attach_inputs(units)
        sets = _policy_sets(tuple(request.policies), await self.reads.sessions({u.session_id for u in units}))
        judged: list[tuple[Unit, Outcome]] = []
        skipped: Counter[str] = Counter()
        truncated = False
        for unit in units:
            if unit.skip is None and not isinstance(sets.get(unit.session_id), PolicySet):
                unit.skip = str(sets.get(unit.session_id, "session_gone"))
        todo = [u for u in units if u.skip is None]
        skipped.update(u.skip for u in units if u.skip is not None)
        for at in range(0, len(todo), BATCH_SIZE):
            if self.clock() - started >= self.time_cap:
                truncated = True
                break
            judged += await asyncio.to_thread(_judge, todo[at : at + BATCH_SIZE], sets)
        return _result(judged, skipped, truncated=truncated, draft_hash=sha256_hex(canonical_json(request.document())))

    async def _units(self, request: schemas.SimulationRequest) -> list[Unit]:
        scope: dict[str, Any] = {"agent_id": request.agent_id, "since": request.since, "limit": request.limit}
        units = [_rule_unit(row.PolicyDecision) for row in await self.reads.rule_receipts(**scope)]
        units += [
            Unit(m.created_at, m.turn_id, m.session_id, "output", message_id=m.id, text=m.content)
            for m in (row.Message for row in await self.reads.replies(**scope))
        ]
        units += [
            Unit(e.created_at, e.turn_id, e.session_id, "tool_result",
                 tool_name=e.tool_name, tool_call_id=e.tool_call_id, text=e.result or "")
            for e in (row.ToolExecution for row in await self.reads.results(**scope))
        ]  # fmt: skip
        units.sort(key=lambda u: u.at, reverse=True)
        return units[: request.limit]

    async def _attach_inputs(self, units: list[Unit]) -> None:
        inputs = await self.reads.turn_inputs(u.turn_id for u in units if u.point == "pre_llm")
        arguments = await self.reads.call_arguments(u.turn_id for u in units if u.point == "tool")
        text_turns = {u.turn_id for u in units if u.point in ("output", "tool_result")}
        receipts: defaultdict[tuple[uuid.UUID, str], list[PolicyDecision]] = defaultdict(list)
        for receipt in await self.reads.text_receipts(text_turns) if text_turns else []:
            receipts[(receipt.turn_id, receipt.point)].append(receipt)
        windows = _reply_windows(await self.reads.reply_times(text_turns)) if text_turns else {}
        for unit in units:
            if unit.point == "pre_llm":
                unit.text = inputs.get(unit.turn_id, "")
            elif unit.point == "tool":
                args = arguments.get((unit.turn_id, unit.tool_call_id or ""))
                unit.skip = unit.skip or (None if args is not None else "input_gone")
                unit.recorded_input = Recorded("tool", unit.tool_name, args or {})
            else:
                unit.recorded = _recorded_text(unit, receipts, windows)
                unit.skip = _text_skip(unit)
            if unit.recorded_input is None:
                unit.recorded_input = Recorded(unit.point, unit.tool_name, None, unit.text)


def _rule_unit(receipt: PolicyDecision) -> Unit:
    return Unit(
        receipt.created_at, receipt.turn_id, receipt.session_id, cast(Point, receipt.point),
        decision_id=receipt.id, tool_name=receipt.tool_name, tool_call_id=receipt.tool_call_id,
        recorded=Outcome(receipt.verdict, (receipt.rule_id,) if receipt.rule_id else ()),
        skip=NOT_REPLAYED.get(receipt.rule_id or ""),
    )  # fmt: skip


def _reply_windows(rows: Iterable[Any]) -> dict[int, datetime | None]:
    """Each assistant message's id: the time of the turn's previous assistant message. An `output`
    receipt is staged just before its reply, so it falls between the two."""
    windows: dict[int, datetime | None] = {}
    previous: dict[uuid.UUID, datetime] = {}
    for row in rows:
        windows[row.id] = previous.get(row.turn_id)
        previous[row.turn_id] = row.created_at
    return windows


def _recorded_text(
    unit: Unit, receipts: dict[tuple[uuid.UUID, str], list[PolicyDecision]], windows: dict[int, datetime | None]
) -> Outcome | None:
    """The recorded outcome on a reply or result, or None when an engine error stood in for the rules."""
    of_turn = receipts.get((unit.turn_id, unit.point), [])
    if unit.point == "tool_result":
        mine = [r for r in of_turn if r.tool_call_id == unit.tool_call_id]
    else:
        after = windows.get(unit.message_id or 0)
        mine = [r for r in of_turn if r.created_at <= unit.at and (after is None or r.created_at > after)]
    if any(r.rule_id == ENGINE_ERROR_RULE_ID for r in mine):
        return None
    unit.decision_id = mine[0].id if mine else None
    return outcome_of((r.verdict, r.rule_id) for r in mine)


def _text_skip(unit: Unit) -> str | None:
    """A reply is stored as the guard released it: after a redact or a deny its original text is gone."""
    if unit.recorded is None:
        return "engine_error"
    if unit.point == "output" and unit.recorded.verdict in ("redact", "deny"):
        return "reply_stored_guarded"
    return None


def _policy_sets(draft: tuple[PolicyRule, ...], sessions: dict[uuid.UUID, Session]) -> dict[uuid.UUID, Any]:
    """The set each session's inputs are judged with, or why it cannot be built."""
    sets: dict[uuid.UUID, PolicySet | str] = {}
    for session_id, session in sessions.items():
        snapshot = session.snapshot or {}
        try:
            agent_rules = parse_rules(list(snapshot.get("policies", [])))
        except ValueError:
            sets[session_id] = "agent_rules_invalid"
            continue
        blacklist = tuple(snapshot.get("tool_blacklist", []))
        sets[session_id] = PolicySet(tenant_rules=draft, agent_rules=agent_rules, tool_blacklist=blacklist)
    return sets


def _judge(units: list[Unit], sets: dict[uuid.UUID, Any]) -> list[tuple[Unit, Outcome]]:
    return [(unit, rejudge(sets[unit.session_id], unit.recorded_input)) for unit in units if unit.recorded_input]


def _result(
    judged: list[tuple[Unit, Outcome]], skipped: Counter[str], *, truncated: bool, draft_hash: str
) -> schemas.SimulationResult:
    counts: Counter[tuple[str, str, str]] = Counter()
    changed: list[schemas.ChangedDecision] = []
    total = 0
    for unit, draft in judged:
        recorded = unit.recorded or Outcome("allow")
        counts[(unit.point, recorded.verdict, draft.verdict)] += 1
        if (recorded.verdict, recorded.rule_ids) == (draft.verdict, draft.rule_ids):
            continue
        total += 1
        if len(changed) < CHANGED_SHOWN:
            changed.append(_changed(unit, recorded, draft))
    return schemas.SimulationResult(
        evaluated=len(judged),
        truncated=truncated,
        counts=[schemas.VerdictCount(point=p, recorded=r, draft=d, count=n) for (p, r, d), n in sorted(counts.items())],
        changed=changed,
        changed_total=total,
        skipped=[schemas.SkippedCount(reason=r, count=n) for r, n in sorted(skipped.items())],
        draft_policy_hash=draft_hash,
    )


def _changed(unit: Unit, recorded: Outcome, draft: Outcome) -> schemas.ChangedDecision:
    return schemas.ChangedDecision(
        decision_id=unit.decision_id, turn_id=unit.turn_id, point=unit.point, tool=unit.tool_name,
        tool_call_id=unit.tool_call_id, recorded_verdict=recorded.verdict, draft_verdict=draft.verdict,
        rule_ids_before=list(recorded.rule_ids), rule_ids_after=list(draft.rule_ids),
    )  # fmt: skip
