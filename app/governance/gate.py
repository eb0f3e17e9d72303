"""Policy sets for a running turn: tenant rules read fresh for every decision, fail-closed."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from functools import cached_property
from typing import Any

from app.core.sql import Sql
from app.governance.output_guard import OutputGuard
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
from app.governance.screening import REFUSED_RESULT, Judged, Screen, judge_text, screen_of
from app.governance.store import newest_tenant_policies

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_HOLDBACK = 256
RESULT_INLINE_CHARS = 4096
"""A tool result up to this long is screened on the event loop; a longer one in a worker thread."""


async def load_tenant_rules(sql: Sql, tenant_id: str) -> tuple[PolicyRule, ...]:
    """One read of the newest version: a single statement, no transaction around it."""
    raw = await newest_tenant_policies(sql, tenant_id)
    return parse_rules(raw) if raw else ()


async def judge_input(policy: PolicySet, input_text: str) -> Decision:
    """`decide_pre_llm`, with user-written regular expressions evaluated off the event loop.

    RE2 searches in time linear in the input and within a fixed memory budget per pattern, so the
    worker thread is always given back; a long input still costs milliseconds the loop should not.
    """
    rules = (*policy.tenant_rules, *policy.agent_rules)
    if not any(rule.point == "pre_llm" and rule.input_regex for rule in rules):
        return decide_pre_llm(policy, input_text)
    return await asyncio.to_thread(decide_pre_llm, policy, input_text)


NOT_READ: Any = object()
"""`first_tenant_rules` when nothing was read ahead: the first decision reads the rules too."""


class Governance:
    _output_holdback = DEFAULT_OUTPUT_HOLDBACK
    _latest: PolicySet | None = None

    def __init__(
        self,
        sql: Sql,
        *,
        tenant_id: str,
        agent_rules: list[dict[str, Any]],
        tool_blacklist: list[str],
        first_tenant_rules: Any = NOT_READ,
        output_holdback: int = DEFAULT_OUTPUT_HOLDBACK,
    ) -> None:
        """`first_tenant_rules`: the tenant's rules as stored, read with the run's session an instant
        before (app/runtime/store/turns.py `SESSION_FOR_TURN`): the first decision uses them, every
        later one reads them again."""
        self._sql = sql
        self._output_holdback = output_holdback
        self._tenant_id = tenant_id
        self._raw_agent_rules = agent_rules
        self._blacklist = tuple(tool_blacklist)
        self._read_ahead = first_tenant_rules

    @cached_property
    def _agent_rules(self) -> tuple[PolicyRule, ...]:
        """Parsed on first use, so rules stored before a validation change (a pattern RE2 refuses)
        fail the decision closed instead of the turn's set-up."""
        return parse_rules(self._raw_agent_rules)

    async def current(self, point: Point) -> PolicySet | Decision:
        """The policy set in force now, or the deny that stands in for it when it cannot be read."""
        try:
            tenant = await self._tenant_rules()
            agent = self._agent_rules
        except Exception as exc:
            log.warning("policy set unavailable (%s): deny", type(exc).__name__)
            reason = f"policy engine error: {type(exc).__name__}"
            return Decision(point, "deny", ENGINE_ERROR_RULE_ID, reason, HASH_UNAVAILABLE)
        self._latest = PolicySet(tenant_rules=tenant, agent_rules=agent, tool_blacklist=self._blacklist)
        return self._latest

    async def _tenant_rules(self) -> tuple[PolicyRule, ...]:
        raw, self._read_ahead = self._read_ahead, NOT_READ
        if raw is NOT_READ:
            return await load_tenant_rules(self._sql, self._tenant_id)
        return parse_rules(raw) if raw else ()

    async def output_guard(self) -> OutputGuard | Decision | None:
        """A guard for one model call's reply, the deny that stands in for it, or None: no `output`
        rule is in force, and nothing stands between the model's deltas and the client.

        The rules are those the run's latest decision read: a model call follows the input's gate or
        its loop's tool calls' gates, which read them fresh, so the call's own read would read them
        again an instant later (once per batch, not once per point). Only a run whose first step is a
        model call (a continuation) reads them here."""
        policy = self._latest or await self.current("output")
        if isinstance(policy, Decision):
            return policy
        screen = screen_of(policy, "output")
        return None if screen is None else OutputGuard(screen, holdback=self._output_holdback)


async def judged_result(policy: PolicySet | Decision, tool_name: str, content: str) -> Judged | None:
    """A tool's result as the model may see it, with the receipts; None when no `tool_result` rule
    takes this tool. A set that could not be read (`policy` is its deny) refuses the result."""
    if isinstance(policy, Decision):
        refusal = dataclasses.replace(policy, point="tool_result")
        return Judged(REFUSED_RESULT.format(reason=refusal.reason), [refusal], refusal)
    screen = screen_of(policy, "tool_result", tool_name=tool_name)
    return None if screen is None else await judge_result(screen, content)


async def judge_result(screen: Screen, text: str) -> Judged:
    """`judge_text` for a tool's result, off the event loop when the result is long."""
    if len(text) <= RESULT_INLINE_CHARS:
        return judge_text(screen, text)
    return await asyncio.to_thread(judge_text, screen, text)
