"""Policy decision point: rules and an input in, one decision out.

Every turn's prompt (``pre_llm``) and every tool call (``tool``) is judged here; the rules of the
``output`` and ``tool_result`` points are validated here and applied to text by
app/governance/screening.py. The module is
pure -- no I/O, no clock, no randomness -- so the same policy and input always give the same
decision, a receipt's ``policy_hash`` names exactly the rules that produced it, and the most
security-critical code in the service can be tested exhaustively without a database.

Precedence: the tool blacklist, then tenant rules, then agent rules; the first matching rule wins
and no match allows. Callers use the ``decide_*`` wrappers, which fail closed: any error raised
while evaluating becomes a deny with rule id ``engine_error``, so a broken rule never lets a call
through.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.core.bounds import INT32_MAX
from app.governance.canonical import canonical_json, sha256_hex
from app.governance.detectors import ResultDetector
from app.governance.patterns import PatternError, check_pattern, pattern_found

Point = Literal["pre_llm", "tool", "output", "tool_result"]
Verdict = Literal["allow", "deny", "requires_approval", "redact"]
ReceiptPoint = Literal["pre_llm", "tool", "output", "tool_result", "human"]
ReceiptVerdict = Literal["allow", "deny", "requires_approval", "redact", "approve"]
"""A receipt also records a human's decision (point `human`, verdict `approve` or `deny`)."""
TextPoint = Literal["output", "tool_result"]
"""The points whose rules judge text (a reply, a tool's result) rather than an input or a call."""

BLACKLIST_RULE_ID = "tool_blacklist"
ENGINE_ERROR_RULE_ID = "engine_error"
HASH_UNAVAILABLE = "unavailable"
MAX_REGEX_LENGTH = 1000
MAX_GLOB_LENGTH = 256

MAX_REPLACEMENT_LENGTH = 128

_FIELD_POINTS: dict[str, frozenset[str]] = {
    "tool": frozenset({"tool", "tool_result"}),
    "args": frozenset({"tool"}),
    "input_regex": frozenset({"pre_llm"}),
    "max_input_chars": frozenset({"pre_llm"}),
    "output_regex": frozenset({"output"}),
    "result_regex": frozenset({"tool_result"}),
    "detect": frozenset({"output", "tool_result"}),
    "replacement": frozenset({"output", "tool_result"}),
}
_POINT_VERDICTS: dict[str, tuple[str, ...]] = {
    "pre_llm": ("allow", "deny", "requires_approval"),
    "tool": ("allow", "deny", "requires_approval"),
    "output": ("allow", "deny", "redact"),
    "tool_result": ("allow", "deny", "redact", "requires_approval"),
}
_TEXT_CONDITION = {"output": "output_regex", "tool_result": "result_regex"}


class PolicyRule(BaseModel):
    """One configured rule; validation errors name the offending field for the API's 422."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=128)
    point: Point
    verdict: Verdict
    reason: str | None = None
    tool: str | None = Field(default=None, min_length=1, max_length=MAX_GLOB_LENGTH, validate_default=True)
    args: dict[str, Any] | None = None
    input_regex: str | None = Field(default=None, min_length=1, max_length=MAX_REGEX_LENGTH)
    max_input_chars: StrictInt | None = Field(default=None, ge=1, le=INT32_MAX)
    output_regex: str | None = Field(default=None, min_length=1, max_length=MAX_REGEX_LENGTH)
    result_regex: str | None = Field(default=None, min_length=1, max_length=MAX_REGEX_LENGTH)
    detect: ResultDetector | None = None
    """A built-in detector (app/governance/detectors.py); `injection` only at `tool_result`."""
    replacement: str | None = Field(default=None, max_length=MAX_REPLACEMENT_LENGTH)
    """What a `redact` puts in place of each match; default `[REDACTED:<detector>]`."""

    @field_validator("verdict")
    @classmethod
    def _verdict_at_point(cls, value: str, info: ValidationInfo) -> str:
        point = info.data.get("point")
        allowed = _POINT_VERDICTS.get(point or "", ())
        if point is None or value in allowed:
            return value
        raise PydanticCustomError(
            "policy_verdict_point",
            "verdict '{verdict}' is not allowed when point is '{point}' (allowed: {allowed})",
            {"verdict": value, "point": point, "allowed": ", ".join(allowed)},
        )

    @field_validator(*_FIELD_POINTS)
    @classmethod
    def _belongs_to_point(cls, value: object, info: ValidationInfo) -> object:
        point = info.data.get("point")
        field = info.field_name or ""
        owners = _FIELD_POINTS[field]
        if value is None or point is None or point in owners:
            return value
        raise PydanticCustomError(
            "policy_field_point",
            "{field} is only allowed when point is {owner}",
            {"field": field, "owner": " or ".join(f"'{owner}'" for owner in sorted(owners))},
        )

    @field_validator("detect")
    @classmethod
    def _injection_reads_results(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value == "injection" and info.data.get("point") == "output":
            raise PydanticCustomError(
                "policy_detector_point", "detect 'injection' is only allowed when point is 'tool_result'"
            )
        return value

    @field_validator("tool")
    @classmethod
    def _tool_required(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None and info.data.get("point") == "tool":
            raise PydanticCustomError("policy_tool_required", "tool is required when point is 'tool'")
        return value

    @field_validator("input_regex", "output_regex", "result_regex")
    @classmethod
    def _regex_compiles(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return value
        try:
            check_pattern(value)
        except PatternError as exc:
            raise PydanticCustomError(
                "invalid_pattern",
                "{field} is not a valid regular expression: {error}",
                {"field": info.field_name, "error": str(exc)},
            ) from exc
        return value

    @model_validator(mode="after")
    def _pre_llm_has_condition(self) -> Self:
        if self.point == "pre_llm" and self.input_regex is None and self.max_input_chars is None:
            raise PydanticCustomError(
                "policy_pre_llm_condition",
                "a pre_llm rule needs input_regex or max_input_chars",
            )
        return self

    @model_validator(mode="after")
    def _text_rule_has_one_condition(self) -> Self:
        field = _TEXT_CONDITION.get(self.point)
        if field is None:
            return self
        if (getattr(self, field) is None) == (self.detect is None):
            raise PydanticCustomError(
                "policy_text_condition",
                "a {point} rule needs exactly one of {field} and detect",
                {"point": self.point, "field": field},
            )
        return self

    @property
    def text_pattern(self) -> str | None:
        """The user-written pattern of an `output` or `tool_result` rule."""
        return self.output_regex or self.result_regex


def _ids_unique(rules: list[PolicyRule]) -> list[PolicyRule]:
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise PydanticCustomError("policy_duplicate_id", "duplicate policy id '{id}'", {"id": rule.id})
        seen.add(rule.id)
    return rules


ToolGlob = Annotated[str, Field(min_length=1, max_length=MAX_GLOB_LENGTH)]
"""A tool-name glob (``fnmatch``), as in a rule's ``tool`` and an agent's ``tool_blacklist``."""

PolicyRuleList = Annotated[list[PolicyRule], AfterValidator(_ids_unique)]
"""A list of rules whose ids are unique; use it as the field type wherever rules are accepted."""

_RULES_ADAPTER: TypeAdapter[list[PolicyRule]] = TypeAdapter(PolicyRuleList)


def parse_rules(raw: list[dict[str, Any]]) -> tuple[PolicyRule, ...]:
    """Validate raw rule dicts (raises ``pydantic.ValidationError`` with per-rule locations)."""
    return tuple(_RULES_ADAPTER.validate_python(raw))


@dataclass(frozen=True)
class PolicySet:
    """Everything one decision is made against: the tenant's rules, the agent's, the blacklist."""

    tenant_rules: tuple[PolicyRule, ...] = ()
    agent_rules: tuple[PolicyRule, ...] = ()
    tool_blacklist: tuple[str, ...] = ()

    @cached_property
    def policy_hash(self) -> str:
        """SHA-256 of the canonical JSON of the set; unset rule fields are left out."""
        document = {
            "tenant": [_rule_document(rule) for rule in self.tenant_rules],
            "agent": [_rule_document(rule) for rule in self.agent_rules],
            "tool_blacklist": list(self.tool_blacklist),
        }
        return sha256_hex(canonical_json(document))


@dataclass(frozen=True)
class Decision:
    """The outcome of one evaluation, as stored in receipts and sent as ``policy.decision``.

    A human's decision (app/governance/receipts.py) adds who decided and the hashes of the
    arguments the human saw and, when edited, of the arguments that ran.
    """

    point: ReceiptPoint
    verdict: ReceiptVerdict
    rule_id: str | None
    reason: str | None
    policy_hash: str
    decided_by: str | None = None
    arguments_sha256: str | None = None
    edited_arguments_sha256: str | None = None
    detector: str | None = None
    """Points `output` and `tool_result`: what matched (a detector's name, or `regex`), never the text."""
    match_count: int | None = None


def evaluate_pre_llm(policy: PolicySet, input_text: str) -> Decision:
    """Judge a turn's input; raises on engine errors (callers use ``decide_pre_llm``)."""
    for rule in rules_at(policy, "pre_llm"):
        if match_input(rule, input_text).matched:
            return _decision_from(rule, policy)
    return Decision("pre_llm", "allow", None, None, policy.policy_hash)


def evaluate_tool(policy: PolicySet, tool_name: str, arguments: dict[str, Any]) -> Decision:
    """Judge one tool call; raises on engine errors (callers use ``decide_tool``)."""
    if not isinstance(arguments, dict):
        raise TypeError(f"tool arguments must be an object, not {type(arguments).__name__}")
    blacklisted = blacklist_decision(policy, tool_name)
    if blacklisted is not None:
        return blacklisted
    for rule in rules_at(policy, "tool"):
        if match_call(rule, tool_name, arguments).matched:
            return _decision_from(rule, policy)
    return Decision("tool", "allow", None, None, policy.policy_hash)


def blacklist_decision(policy: PolicySet, tool_name: str) -> Decision | None:
    """The deny for a blacklisted tool name, or None; checked before any rule and any ledger lookup."""
    pattern = next((p for p in policy.tool_blacklist if match_glob(p, tool_name).matched), None)
    if pattern is None:
        return None
    reason = f"tool '{tool_name}' matches blacklist pattern '{pattern}'"
    return Decision("tool", "deny", BLACKLIST_RULE_ID, reason, policy.policy_hash)


def decide_pre_llm(policy: PolicySet, input_text: str) -> Decision:
    """``evaluate_pre_llm`` that never raises: an engine error is a deny."""
    try:
        return evaluate_pre_llm(policy, input_text)
    except Exception as exc:
        return _engine_error("pre_llm", policy, exc)


def decide_tool(policy: PolicySet, tool_name: str, arguments: dict[str, Any]) -> Decision:
    """``evaluate_tool`` that never raises: an engine error is a deny."""
    try:
        return evaluate_tool(policy, tool_name, arguments)
    except Exception as exc:
        return _engine_error("tool", policy, exc)


def arguments_hash(arguments: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a tool call's arguments, independent of key order."""
    return sha256_hex(canonical_json(arguments))


def _rule_document(rule: PolicyRule) -> dict[str, Any]:
    return rule.model_dump(mode="json", exclude_none=True)


def rules_at(policy: PolicySet, point: Point) -> Iterator[PolicyRule]:
    """The set's rules of one point, in precedence order (the tenant's first)."""
    return (rule for rule in chain(policy.tenant_rules, policy.agent_rules) if rule.point == point)


@dataclass(frozen=True, slots=True)
class Match:
    """Whether one condition took an input, and why in words that never quote the input."""

    matched: bool
    why: str


def match_glob(glob: str, tool_name: str) -> Match:
    if fnmatch.fnmatchcase(tool_name, glob):
        return Match(True, f"tool glob matched '{glob}'")
    return Match(False, f"tool glob '{glob}' did not match")


def match_input(rule: PolicyRule, input_text: str) -> Match:
    """A `pre_llm` rule on a turn's input; raises what a pattern raises (callers fail closed)."""
    if rule.max_input_chars is not None and len(input_text) <= rule.max_input_chars:
        return Match(False, f"input is not longer than max_input_chars {rule.max_input_chars}")
    if rule.input_regex is None:
        return Match(True, f"input is longer than max_input_chars {rule.max_input_chars}")
    if pattern_found(rule.input_regex, input_text):
        return Match(True, "input_regex matched")
    return Match(False, "input_regex did not match")


def match_call(rule: PolicyRule, tool_name: str, arguments: dict[str, Any]) -> Match:
    """A `tool` rule on one call: its glob on the name, then each `args` value on the arguments."""
    if rule.tool is None:
        return Match(False, "the rule names no tool")
    glob = match_glob(rule.tool, tool_name)
    if not glob.matched:
        return glob
    expected = rule.args or {}
    differing = [key for key, value in expected.items() if key not in arguments or arguments[key] != value]
    if differing:
        return Match(False, f"{glob.why}; args differ at {', '.join(sorted(differing))}")
    return Match(True, f"{glob.why}; args equal" if expected else glob.why)


def _decision_from(rule: PolicyRule, policy: PolicySet) -> Decision:
    return Decision(rule.point, rule.verdict, rule.id, rule.reason, policy.policy_hash)


def _engine_error(point: Point, policy: PolicySet, exc: Exception) -> Decision:
    try:
        policy_hash = policy.policy_hash
    except Exception:
        policy_hash = HASH_UNAVAILABLE
    reason = f"policy engine error: {exception_name(exc)}"
    return Decision(point, "deny", ENGINE_ERROR_RULE_ID, reason, policy_hash)


def exception_name(exc: Exception) -> str:
    kind = type(exc)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"
