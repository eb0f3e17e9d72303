"""`GET /decisions/{id}/explain`: the policy set in force for one receipt, rebuilt, and its rules on
the recorded input in the gate's order.

The set is the tenant's policy version created at or before the receipt plus the agent rules and
blacklist of the session's pinned configuration. Its hash is compared with the receipt's: equal
means the explanation is of exactly the rules that decided (`reconstructed: true`).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.errors import NotFound
from app.governance.policy import PolicyRule, PolicySet, parse_rules
from app.governance.receipts import UNKNOWN_TOOL_RULE_ID
from app.governance.replay import Explanation, Recorded, RuleTrace, explain
from app.models import PolicyDecision
from app.policies import schemas
from app.policies.recorded_repository import RecordedReads
from app.turns.repository import TurnRepository

HASH_DIFFERS = (
    "the rebuilt set's hash differs from the receipt's: the tenant policy changed within the same instant, "
    "a rule was stored before a validation change, or the decision was made against rules read earlier"
)


GUARDED_REPLY = (
    "the stored reply is the text the guard released (redactions applied, a blocked reply cut), so the rules "
    "are judged on that, not on what the model wrote"
)


class DecisionExplainer:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.reads = RecordedReads(db, principal.tenant_id)

    async def explain(self, decision_id: uuid.UUID) -> schemas.DecisionExplanation:
        receipt = await self.reads.receipt(decision_id)
        turns = TurnRepository(self.db, self.principal.tenant_id)
        if receipt is None or await turns.get(self.principal, receipt.turn_id) is None:
            raise NotFound(f"Decision {decision_id} not found")
        session = (await self.reads.sessions([receipt.session_id]))[receipt.session_id]
        tenant = await self.reads.tenant_policies_at(receipt.created_at)
        snapshot = session.snapshot or {}
        policy = PolicySet(
            tenant_rules=_parsed(tenant.policies if tenant else []),
            agent_rules=_parsed(list(snapshot.get("policies", []))),
            tool_blacklist=tuple(snapshot.get("tool_blacklist", [])),
        )
        found = await self._explained(receipt, policy)
        same = policy.policy_hash == receipt.policy_hash
        notes = [] if same else [HASH_DIFFERS]
        if receipt.point == "output" and receipt.verdict in ("redact", "deny"):
            notes.append(GUARDED_REPLY)
        return schemas.DecisionExplanation(
            decision_id=receipt.id, turn_id=receipt.turn_id, point=receipt.point, tool=receipt.tool_name,
            tool_call_id=receipt.tool_call_id, recorded_verdict=receipt.verdict, recorded_rule_id=receipt.rule_id,
            verdict=found.verdict, decided_by=found.decided_by, policy_hash=receipt.policy_hash,
            reconstructed_policy_hash=policy.policy_hash, reconstructed=same, note="; ".join(notes) or None,
            agent_id=session.agent_id, agent_version=session.agent_version,
            tenant_policy_version=tenant.version if tenant else 0,
            rules=[schemas.RuleExplanation(**asdict(trace)) for trace in found.rules],
        )  # fmt: skip

    async def _explained(self, receipt: PolicyDecision, policy: PolicySet) -> Explanation:
        if receipt.point == "human":
            why = f"decided by {receipt.decided_by or 'a human'}"
            return _builtin(receipt, receipt.rule_id or "human", why)
        if receipt.rule_id == UNKNOWN_TOOL_RULE_ID:
            return _builtin(receipt, UNKNOWN_TOOL_RULE_ID, "the tool is not one of the agent's, no rule was evaluated")
        recorded = await self._recorded(receipt)
        if recorded is None:
            return _builtin(receipt, "input_gone", "the recorded input is no longer stored (retention)")
        return explain(policy, recorded)

    async def _recorded(self, receipt: PolicyDecision) -> Recorded | None:
        if receipt.point == "pre_llm":
            text = (await self.reads.turn_inputs([receipt.turn_id])).get(receipt.turn_id)
            return None if text is None else Recorded("pre_llm", text=text)
        if receipt.point == "tool":
            arguments = (await self.reads.call_arguments([receipt.turn_id])).get(
                (receipt.turn_id, receipt.tool_call_id or "")
            )
            return None if arguments is None else Recorded("tool", receipt.tool_name, arguments)
        if receipt.point == "output":
            reply = await self.reads.reply_of(receipt.turn_id, receipt.created_at)
            return None if reply is None else Recorded("output", text=reply)
        result = await self.reads.result_of(receipt.turn_id, receipt.tool_call_id or "")
        return None if result is None else Recorded("tool_result", receipt.tool_name, text=result)


def _parsed(raw: list[Any]) -> tuple[PolicyRule, ...]:
    """Stored rules that no longer validate are left out; the hash then differs and says so."""
    try:
        return parse_rules(raw)
    except ValueError:
        return ()


def _builtin(receipt: PolicyDecision, rule_id: str, why: str) -> Explanation:
    trace = RuleTrace(rule_id, "builtin", receipt.point, True, True, why)
    return Explanation(receipt.verdict, rule_id, [trace])
