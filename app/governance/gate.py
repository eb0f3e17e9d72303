"""Policy sets for a running turn: tenant rules read fresh for every decision, fail-closed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.governance.policy import (
    ENGINE_ERROR_RULE_ID,
    HASH_UNAVAILABLE,
    Decision,
    Point,
    PolicyRule,
    PolicySet,
    decide_pre_llm,
    parse_rules,
)
from app.models import TenantPolicy

log = logging.getLogger(__name__)


async def load_tenant_rules(engine: AsyncEngine, tenant_id: str) -> tuple[PolicyRule, ...]:
    """One read of the newest version (pass an AUTOCOMMIT engine to spare BEGIN and ROLLBACK)."""
    stmt = (
        select(TenantPolicy.policies)
        .where(TenantPolicy.tenant_id == tenant_id)
        .order_by(TenantPolicy.version.desc())
        .limit(1)
    )
    async with engine.connect() as conn:
        raw = await conn.scalar(stmt)
    return parse_rules(raw) if raw else ()


async def judge_input(policy: PolicySet, input_text: str) -> Decision:
    """`decide_pre_llm`, with user-written regular expressions evaluated off the event loop.

    The regex engine itself stops a runaway pattern (a timeout, hence an engine-error deny), so the
    worker thread is always given back.
    """
    rules = (*policy.tenant_rules, *policy.agent_rules)
    if not any(rule.point == "pre_llm" and rule.input_regex for rule in rules):
        return decide_pre_llm(policy, input_text)
    return await asyncio.to_thread(decide_pre_llm, policy, input_text)


class Governance:
    def __init__(
        self, engine: AsyncEngine, *, tenant_id: str, agent_rules: list[dict[str, Any]], tool_blacklist: list[str]
    ) -> None:
        self._engine = engine
        self._tenant_id = tenant_id
        self._agent_rules = parse_rules(agent_rules)
        self._blacklist = tuple(tool_blacklist)

    async def current(self, point: Point) -> PolicySet | Decision:
        """The policy set in force now, or the deny that stands in for it when it cannot be read."""
        try:
            tenant = await load_tenant_rules(self._engine, self._tenant_id)
        except Exception as exc:
            log.warning("policy set unavailable (%s): deny", type(exc).__name__)
            reason = f"policy engine error: {type(exc).__name__}"
            return Decision(point, "deny", ENGINE_ERROR_RULE_ID, reason, HASH_UNAVAILABLE)
        return PolicySet(tenant_rules=tenant, agent_rules=self._agent_rules, tool_blacklist=self._blacklist)
