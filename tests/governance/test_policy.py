"""The policy decision point, table by table: precedence, matching, hashing, failing closed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pydantic import ValidationError

from app.governance.canonical import canonical_json, sha256_hex
from app.governance.policy import (
    BLACKLIST_RULE_ID,
    ENGINE_ERROR_RULE_ID,
    HASH_UNAVAILABLE,
    Decision,
    PolicyRule,
    PolicySet,
    arguments_hash,
    decide_pre_llm,
    decide_tool,
    evaluate_pre_llm,
    evaluate_tool,
    parse_rules,
)


def tool_rule(rule_id: str, tool: str, verdict: str = "deny", **fields: Any) -> PolicyRule:
    return PolicyRule.model_validate({"id": rule_id, "point": "tool", "tool": tool, "verdict": verdict, **fields})


def pre_rule(rule_id: str, verdict: str = "deny", **fields: Any) -> PolicyRule:
    return PolicyRule.model_validate({"id": rule_id, "point": "pre_llm", "verdict": verdict, **fields})


def allowed(decision: Decision) -> bool:
    return decision.verdict == "allow" and decision.rule_id is None and decision.reason is None


# --- tool point: precedence -------------------------------------------------------------------


def test_tool_first_matching_rule_wins() -> None:
    policy = PolicySet(
        agent_rules=(
            tool_rule("other", "calculator", "allow"),
            tool_rule("broad", "github__*", "requires_approval", reason="writes need a human"),
            tool_rule("narrow", "github__create_issue", "deny"),
        )
    )

    decision = evaluate_tool(policy, "github__create_issue", {})

    assert decision == Decision("tool", "requires_approval", "broad", "writes need a human", policy.policy_hash)


@pytest.mark.parametrize(
    ("tenant_verdict", "agent_verdict"),
    [
        ("allow", "deny"),
        ("deny", "allow"),
        ("requires_approval", "allow"),
        ("allow", "requires_approval"),
    ],
)
def test_tool_tenant_rules_are_evaluated_before_agent_rules(tenant_verdict: str, agent_verdict: str) -> None:
    policy = PolicySet(
        tenant_rules=(tool_rule("tenant", "github__*", tenant_verdict),),
        agent_rules=(tool_rule("agent", "github__create_issue", agent_verdict),),
    )

    decision = evaluate_tool(policy, "github__create_issue", {})

    assert (decision.verdict, decision.rule_id) == (tenant_verdict, "tenant")


def test_tool_agent_rule_applies_when_no_tenant_rule_matches() -> None:
    policy = PolicySet(
        tenant_rules=(tool_rule("tenant", "slack__*", "allow"),),
        agent_rules=(tool_rule("agent", "github__*", "deny"),),
    )

    assert evaluate_tool(policy, "github__create_issue", {}).rule_id == "agent"


# --- tool point: glob matching ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "tool_name", "matches"),
    [
        ("github__create_*", "github__create_issue", True),
        ("github__create_*", "github__create_", True),
        ("github__create_*", "github__delete_repo", False),
        ("github__create_*", "GitHub__create_issue", False),
        ("GITHUB__*", "github__create_issue", False),
        ("github__create_*", "xgithub__create_issue", False),
        ("*", "calculator", True),
        ("calc?lator", "calculator", True),
        ("calc?lator", "calclator", False),
        ("[ce]cho", "echo", True),
        ("[!e]cho", "echo", False),
        ("echo", "echo", True),
        ("echo", "echo2", False),
        ("echo", "ech", False),
    ],
)
def test_tool_glob_is_case_sensitive_fnmatch(pattern: str, tool_name: str, matches: bool) -> None:
    policy = PolicySet(agent_rules=(tool_rule("r", pattern, "deny"),))

    decision = evaluate_tool(policy, tool_name, {})

    assert decision.rule_id == ("r" if matches else None)


# --- tool point: argument matching ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule_args", "arguments", "matches"),
    [
        ({"repo": "acme/api"}, {"repo": "acme/api"}, True),
        ({"repo": "acme/api"}, {"repo": "acme/api", "title": "x"}, True),
        ({"repo": "acme/api"}, {"repo": "acme/web"}, False),
        ({"repo": "acme/api"}, {"repo": "ACME/api"}, False),
        ({"repo": "acme/api"}, {}, False),
        ({"repo": "acme/api"}, {"Repo": "acme/api"}, False),
        ({"repo": "acme/api", "draft": True}, {"repo": "acme/api", "draft": True}, True),
        ({"repo": "acme/api", "draft": True}, {"repo": "acme/api", "draft": False}, False),
        ({"repo": "acme/api", "draft": True}, {"repo": "acme/api"}, False),
        ({"draft": None}, {"draft": None}, True),
        ({"draft": None}, {}, False),
        ({"labels": ["a", "b"]}, {"labels": ["a", "b"]}, True),
        ({"labels": ["a", "b"]}, {"labels": ["b", "a"]}, False),
        ({"meta": {"x": 1, "y": 2}}, {"meta": {"y": 2, "x": 1}}, True),
        ({"count": 3}, {"count": "3"}, False),
        ({}, {"anything": 1}, True),
    ],
)
def test_tool_args_match_each_listed_value_exactly(
    rule_args: dict[str, Any], arguments: dict[str, Any], matches: bool
) -> None:
    policy = PolicySet(agent_rules=(tool_rule("r", "github__*", "deny", args=rule_args),))

    decision = evaluate_tool(policy, "github__create_issue", arguments)

    assert decision.rule_id == ("r" if matches else None)


def test_tool_args_rule_does_not_match_another_tool_with_the_same_arguments() -> None:
    policy = PolicySet(agent_rules=(tool_rule("r", "github__create_*", args={"repo": "acme/api"}),))

    assert allowed(evaluate_tool(policy, "github__delete_repo", {"repo": "acme/api"}))


# --- tool point: blacklist --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blacklist", "tool_name", "pattern"),
    [
        (("github__delete_repo",), "github__delete_repo", "github__delete_repo"),
        (("github__delete_*",), "github__delete_repo", "github__delete_*"),
        (("slack__*", "*__delete_*"), "github__delete_repo", "*__delete_*"),
        (("github__*", "github__delete_repo"), "github__delete_repo", "github__*"),
    ],
)
def test_blacklist_denies_before_any_rule_even_a_tenant_allow(
    blacklist: tuple[str, ...], tool_name: str, pattern: str
) -> None:
    policy = PolicySet(
        tenant_rules=(tool_rule("tenant-allow", "*", "allow"),),
        agent_rules=(tool_rule("agent-allow", "*", "allow"),),
        tool_blacklist=blacklist,
    )

    decision = evaluate_tool(policy, tool_name, {})

    assert (decision.point, decision.verdict, decision.rule_id) == ("tool", "deny", BLACKLIST_RULE_ID)
    assert decision.reason is not None
    assert f"'{pattern}'" in decision.reason
    assert decision.policy_hash == policy.policy_hash


@pytest.mark.parametrize("tool_name", ["github__delete_repos", "GITHUB__DELETE_REPO", "github__create_issue"])
def test_blacklist_miss_falls_through_to_rules(tool_name: str) -> None:
    policy = PolicySet(
        agent_rules=(tool_rule("r", "*", "requires_approval"),),
        tool_blacklist=("github__delete_repo",),
    )

    assert evaluate_tool(policy, tool_name, {}).rule_id == "r"


# --- tool point: default ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [
        PolicySet(),
        PolicySet(tenant_rules=(tool_rule("t", "slack__*"),), agent_rules=(tool_rule("a", "echo"),)),
        PolicySet(agent_rules=(pre_rule("p", input_regex=".*"),)),
        PolicySet(tool_blacklist=("github__delete_*",)),
    ],
    ids=["empty", "no-rule-matches", "only-pre-llm-rules", "blacklist-miss"],
)
def test_tool_without_a_matching_rule_is_allowed(policy: PolicySet) -> None:
    decision = evaluate_tool(policy, "calculator", {"expression": "2+2"})

    assert decision == Decision("tool", "allow", None, None, policy.policy_hash)


# --- pre_llm point ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "input_text", "matches"),
    [
        ({"input_regex": "(?i)password"}, "my PassWord is hunter2", True),
        ({"input_regex": "(?i)password"}, "nothing to see", False),
        ({"input_regex": "password"}, "my PASSWORD", False),
        ({"input_regex": "password"}, "my password", True),
        ({"input_regex": r"\bssn\b"}, "the ssn is", True),
        ({"input_regex": r"\bssn\b"}, "lessness", False),
        ({"input_regex": "^secret"}, "a secret", False),
        ({"input_regex": "(?m)^secret"}, "line one\nsecret two", True),
        ({"max_input_chars": 10}, "x" * 10, False),
        ({"max_input_chars": 10}, "x" * 11, True),
        ({"max_input_chars": 1}, "", False),
        ({"max_input_chars": 3}, "héé", False),
        ({"input_regex": "x", "max_input_chars": 5}, "xxxxxx", True),
        ({"input_regex": "x", "max_input_chars": 5}, "xxxxx", False),
        ({"input_regex": "x", "max_input_chars": 5}, "yyyyyy", False),
    ],
)
def test_pre_llm_rule_matches_on_regex_search_and_length(
    fields: dict[str, Any], input_text: str, matches: bool
) -> None:
    policy = PolicySet(agent_rules=(pre_rule("r", **fields),))

    decision = evaluate_pre_llm(policy, input_text)

    assert decision.point == "pre_llm"
    assert decision.rule_id == ("r" if matches else None)
    assert decision.verdict == ("deny" if matches else "allow")


def test_pre_llm_first_matching_rule_wins() -> None:
    policy = PolicySet(
        agent_rules=(
            pre_rule("long", max_input_chars=1000),
            pre_rule("secret", "requires_approval", input_regex="secret", reason="secrets"),
            pre_rule("any", "deny", input_regex="."),
        )
    )

    decision = evaluate_pre_llm(policy, "a secret")

    assert decision == Decision("pre_llm", "requires_approval", "secret", "secrets", policy.policy_hash)


@pytest.mark.parametrize(
    ("tenant_verdict", "agent_verdict"),
    [("allow", "deny"), ("deny", "allow"), ("requires_approval", "deny")],
)
def test_pre_llm_tenant_rules_are_evaluated_before_agent_rules(tenant_verdict: str, agent_verdict: str) -> None:
    policy = PolicySet(
        tenant_rules=(pre_rule("tenant", tenant_verdict, input_regex="(?i)password"),),
        agent_rules=(pre_rule("agent", agent_verdict, input_regex="password"),),
    )

    decision = evaluate_pre_llm(policy, "password")

    assert (decision.verdict, decision.rule_id) == (tenant_verdict, "tenant")


@pytest.mark.parametrize(
    "policy",
    [
        PolicySet(),
        PolicySet(agent_rules=(pre_rule("r", input_regex="password"),)),
        PolicySet(tenant_rules=(tool_rule("t", "*"),), tool_blacklist=("*",)),
    ],
    ids=["empty", "no-rule-matches", "only-tool-rules-and-blacklist"],
)
def test_pre_llm_without_a_matching_rule_is_allowed(policy: PolicySet) -> None:
    decision = evaluate_pre_llm(policy, "hello")

    assert decision == Decision("pre_llm", "allow", None, None, policy.policy_hash)


# --- policy hash ------------------------------------------------------------------------------

GH_RULE = {"id": "gh", "point": "tool", "tool": "github__create_*", "verdict": "requires_approval"}
PRE_RULE = {"id": "pw", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"}
BASE = PolicySet(
    tenant_rules=parse_rules([PRE_RULE]),
    agent_rules=parse_rules([GH_RULE]),
    tool_blacklist=("github__delete_repo",),
)


def test_policy_hash_is_sha256_of_canonical_json_without_unset_fields() -> None:
    document = {
        "tenant": [PRE_RULE],
        "agent": [GH_RULE],
        "tool_blacklist": ["github__delete_repo"],
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    assert BASE.policy_hash == hashlib.sha256(text.encode()).hexdigest()


def test_policy_hash_ignores_key_order_and_explicit_nulls() -> None:
    reordered = {key: GH_RULE[key] for key in reversed(list(GH_RULE))}
    same = PolicySet(
        tenant_rules=parse_rules([{**PRE_RULE, "reason": None, "max_input_chars": None}]),
        agent_rules=parse_rules([reordered]),
        tool_blacklist=("github__delete_repo",),
    )

    assert same.policy_hash == BASE.policy_hash


def test_policy_hash_ignores_argument_key_order() -> None:
    first = PolicySet(agent_rules=(tool_rule("r", "x", args={"a": 1, "b": {"c": 2, "d": 3}}),))
    second = PolicySet(agent_rules=(tool_rule("r", "x", args={"b": {"d": 3, "c": 2}, "a": 1}),))

    assert first.policy_hash == second.policy_hash


def _with_agent_rule(**changes: Any) -> PolicySet:
    return PolicySet(BASE.tenant_rules, parse_rules([{**GH_RULE, **changes}]), BASE.tool_blacklist)


def _with_tenant_rule(**changes: Any) -> PolicySet:
    return PolicySet(parse_rules([{**PRE_RULE, **changes}]), BASE.agent_rules, BASE.tool_blacklist)


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(_with_agent_rule(verdict="deny"), id="verdict"),
        pytest.param(_with_agent_rule(id="gh2"), id="id"),
        pytest.param(_with_agent_rule(tool="github__*"), id="tool"),
        pytest.param(_with_agent_rule(reason="why"), id="reason"),
        pytest.param(_with_agent_rule(args={}), id="empty-args"),
        pytest.param(_with_agent_rule(args={"x": None}), id="null-arg"),
        pytest.param(_with_tenant_rule(input_regex="password"), id="regex"),
        pytest.param(_with_tenant_rule(max_input_chars=9), id="max-chars"),
        pytest.param(
            PolicySet(BASE.tenant_rules, (*BASE.agent_rules, tool_rule("more", "echo")), BASE.tool_blacklist),
            id="added-rule",
        ),
        pytest.param(PolicySet(BASE.tenant_rules, (), BASE.tool_blacklist), id="removed-rule"),
        pytest.param(PolicySet(BASE.tenant_rules, BASE.agent_rules, ()), id="no-blacklist"),
        pytest.param(PolicySet(BASE.tenant_rules, BASE.agent_rules, ("github__delete_*",)), id="blacklist-pattern"),
        pytest.param(
            PolicySet(BASE.tenant_rules, BASE.agent_rules, ("github__delete_repo", "x")), id="blacklist-entry"
        ),
    ],
)
def test_policy_hash_changes_with_any_rule_or_blacklist_change(changed: PolicySet) -> None:
    assert changed.policy_hash != BASE.policy_hash


def test_policy_hash_changes_with_rule_order() -> None:
    first, second = tool_rule("a", "x"), tool_rule("b", "y")

    assert PolicySet(agent_rules=(first, second)).policy_hash != PolicySet(agent_rules=(second, first)).policy_hash


def test_policy_hash_differs_between_tenant_and_agent_placement() -> None:
    rules = parse_rules([GH_RULE])

    assert PolicySet(tenant_rules=rules).policy_hash != PolicySet(agent_rules=rules).policy_hash


def test_decisions_carry_the_sets_hash() -> None:
    assert evaluate_tool(BASE, "github__create_issue", {}).policy_hash == BASE.policy_hash
    assert evaluate_pre_llm(BASE, "password").policy_hash == BASE.policy_hash


# --- failing closed ---------------------------------------------------------------------------

# model_construct skips validation, so these stand in for rules that are broken at evaluation time.
BAD_REGEX = PolicySet(
    agent_rules=(PolicyRule.model_construct(id="bad", point="pre_llm", verdict="allow", input_regex="("),)
)
BAD_ARGS = PolicySet(
    agent_rules=(PolicyRule.model_construct(id="bad", point="tool", verdict="allow", tool="*", args="x"),)  # type: ignore[arg-type]
)
UNHASHABLE = PolicySet(
    agent_rules=(
        PolicyRule.model_construct(id="bad", point="tool", verdict="allow", tool="*", args={1: object()}),  # type: ignore[dict-item]
    )
)


def test_evaluate_raises_where_decide_fails_closed() -> None:
    with pytest.raises(Exception, match="missing \\)"):
        evaluate_pre_llm(BAD_REGEX, "hello")


@pytest.mark.parametrize(
    ("policy", "input_text", "exception_type"),
    [
        (BAD_REGEX, "hello", "app.governance.patterns.PatternError"),
        (PolicySet(agent_rules=(pre_rule("r", input_regex="x"),)), None, "TypeError"),
    ],
)
def test_pre_llm_engine_error_is_a_deny(policy: PolicySet, input_text: Any, exception_type: str) -> None:
    decision = decide_pre_llm(policy, input_text)

    assert decision == Decision(
        "pre_llm", "deny", ENGINE_ERROR_RULE_ID, f"policy engine error: {exception_type}", policy.policy_hash
    )


@pytest.mark.parametrize(
    ("policy", "arguments", "exception_type"),
    [
        (PolicySet(), ["not", "a", "dict"], "TypeError"),
        (PolicySet(), None, "TypeError"),
        (PolicySet(), '{"expression": "2+2"}', "TypeError"),
        pytest.param(BAD_ARGS, {}, "AttributeError", marks=pytest.mark.filterwarnings("ignore::UserWarning")),
    ],
)
def test_tool_engine_error_is_a_deny(policy: PolicySet, arguments: Any, exception_type: str) -> None:
    decision = decide_tool(policy, "calculator", arguments)

    assert decision == Decision(
        "tool", "deny", ENGINE_ERROR_RULE_ID, f"policy engine error: {exception_type}", policy.policy_hash
    )


def test_engine_error_reason_does_not_leak_the_input() -> None:
    decision = decide_pre_llm(BAD_REGEX, "my password is hunter2")

    assert decision.reason is not None
    assert "hunter2" not in decision.reason


def test_unhashable_policy_is_a_deny_with_hash_unavailable() -> None:
    decisions = [decide_pre_llm(UNHASHABLE, "hello"), decide_tool(UNHASHABLE, "echo", {})]

    assert [(d.verdict, d.rule_id, d.policy_hash) for d in decisions] == [
        ("deny", ENGINE_ERROR_RULE_ID, HASH_UNAVAILABLE)
    ] * 2


@pytest.mark.parametrize(("tool_name", "arguments"), [("github__create_issue", {}), ("echo", {"text": "hi"})])
def test_decide_tool_passes_through_a_healthy_evaluation(tool_name: str, arguments: dict[str, Any]) -> None:
    assert decide_tool(BASE, tool_name, arguments) == evaluate_tool(BASE, tool_name, arguments)


@pytest.mark.parametrize("input_text", ["password", "hello"])
def test_decide_pre_llm_passes_through_a_healthy_evaluation(input_text: str) -> None:
    assert decide_pre_llm(BASE, input_text) == evaluate_pre_llm(BASE, input_text)


# --- rule validation --------------------------------------------------------------------------


def _tool(**fields: Any) -> dict[str, Any]:
    return {"id": "r", "point": "tool", "verdict": "deny", "tool": "x", **fields}


def _pre(**fields: Any) -> dict[str, Any]:
    return {"id": "r", "point": "pre_llm", "verdict": "deny", **fields}


@pytest.mark.parametrize(
    ("raw", "loc", "message"),
    [
        pytest.param(
            {"id": "r", "point": "tool", "verdict": "deny"},
            ("tool",),
            "tool is required when point is 'tool'",
            id="missing-tool",
        ),
        pytest.param(_tool(tool=None), ("tool",), "tool is required when point is 'tool'", id="null-tool"),
        pytest.param(_tool(tool=""), ("tool",), "at least 1 character", id="empty-tool"),
        pytest.param(
            _pre(input_regex="("),
            ("input_regex",),
            "input_regex is not a valid regular expression",
            id="bad-regex",
        ),
        pytest.param(
            _pre(input_regex="a{4294967296}"),
            ("input_regex",),
            "input_regex is not a valid regular expression",
            id="huge-repeat-regex",
        ),
        pytest.param(_pre(input_regex="a" * 1001), ("input_regex",), "at most 1000 characters", id="long-regex"),
        pytest.param(_tool(toool="y"), ("toool",), "Extra inputs are not permitted", id="unknown-field"),
        pytest.param(
            _pre(input_regex="x", tool="echo"),
            ("tool",),
            "tool is only allowed when point is 'tool'",
            id="pre-llm-with-tool",
        ),
        pytest.param(
            _pre(input_regex="x", args={}),
            ("args",),
            "args is only allowed when point is 'tool'",
            id="pre-llm-with-args",
        ),
        pytest.param(
            _tool(input_regex="x"),
            ("input_regex",),
            "input_regex is only allowed when point is 'pre_llm'",
            id="tool-with-regex",
        ),
        pytest.param(
            _tool(max_input_chars=5),
            ("max_input_chars",),
            "max_input_chars is only allowed when point is 'pre_llm'",
            id="tool-with-max-chars",
        ),
        pytest.param(_pre(), (), "a pre_llm rule needs input_regex or max_input_chars", id="no-condition"),
        pytest.param(_pre(max_input_chars=0), ("max_input_chars",), "greater than or equal to 1", id="zero-max-chars"),
        pytest.param(_tool(id=""), ("id",), "at least 1 character", id="empty-id"),
        pytest.param(_tool(id="r" * 129), ("id",), "at most 128 characters", id="long-id"),
        pytest.param(_tool(point="post_llm"), ("point",), "'output' or 'tool_result'", id="unknown-point"),
        pytest.param(_tool(verdict="maybe"), ("verdict",), "'requires_approval'", id="unknown-verdict"),
    ],
)
def test_invalid_rule_is_rejected_naming_the_field(raw: dict[str, Any], loc: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PolicyRule.model_validate(raw)

    [error] = caught.value.errors()
    assert error["loc"] == loc
    assert message in error["msg"]


@pytest.mark.parametrize(
    "raw",
    [
        {
            "id": "gh-writes",
            "point": "tool",
            "tool": "github__create_*",
            "verdict": "requires_approval",
            "reason": "writes to GitHub need a human",
        },
        {"id": "no-secrets", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"},
        {"id": "long", "point": "pre_llm", "max_input_chars": 1, "verdict": "requires_approval"},
        {"id": "r" * 128, "point": "tool", "tool": "*", "args": {"a": [1, {"b": None}]}, "verdict": "allow"},
        {"id": "re", "point": "pre_llm", "input_regex": "a" * 1000, "verdict": "deny"},
    ],
)
def test_valid_rule_is_accepted(raw: dict[str, Any]) -> None:
    assert PolicyRule.model_validate(raw).model_dump(exclude_none=True) == raw


def test_rule_is_immutable() -> None:
    rule = tool_rule("r", "x")

    with pytest.raises(ValidationError):
        rule.verdict = "allow"  # type: ignore[misc]


def test_parse_rules_returns_a_tuple_in_order() -> None:
    assert [rule.id for rule in parse_rules([PRE_RULE, GH_RULE])] == ["pw", "gh"]
    assert parse_rules([]) == ()


def test_parse_rules_locates_the_invalid_rule() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rules([GH_RULE, {**PRE_RULE, "tool": "x"}])

    [error] = caught.value.errors()
    assert error["loc"] == (1, "tool")


def test_parse_rules_rejects_duplicate_ids() -> None:
    with pytest.raises(ValidationError, match="duplicate policy id 'gh'"):
        parse_rules([GH_RULE, {**GH_RULE, "tool": "other"}])


# --- canonical hashing ------------------------------------------------------------------------


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_unicode() -> None:
    assert canonical_json({"b": [1, {"d": 2, "c": "é"}], "a": None}) == '{"a":null,"b":[1,{"c":"é","d":2}]}'


def test_sha256_hex_hashes_utf8() -> None:
    assert sha256_hex("é") == hashlib.sha256("é".encode()).hexdigest()


@pytest.mark.parametrize(
    ("first", "second", "equal"),
    [
        ({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"d": 3, "c": 2}, "a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"a": "1"}, False),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({}, {"a": None}, False),
    ],
)
def test_arguments_hash_depends_on_values_not_key_order(
    first: dict[str, Any], second: dict[str, Any], equal: bool
) -> None:
    assert (arguments_hash(first) == arguments_hash(second)) is equal


def test_arguments_hash_is_sha256_of_canonical_json() -> None:
    arguments = {"text": "héllo", "n": 1}

    assert arguments_hash(arguments) == sha256_hex(canonical_json(arguments))
    assert len(arguments_hash(arguments)) == 64
