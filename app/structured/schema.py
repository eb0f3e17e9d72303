"""Output schemas: accepted at create time, checked by a validator that cannot be made to backtrack.

A schema is JSON Schema 2020-12 with `"type": "object"` at the top, at most `MAX_SCHEMA_BYTES`
as JSON. Its `pattern` and `patternProperties` keywords are user-written regular expressions that
we execute, so they run on RE2 (app/governance/patterns.py), not Python's backtracking `re`; a
pattern RE2 refuses is refused here. `$ref` resolves inside the schema only: nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import orjson
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from app.governance.patterns import PatternError, check_pattern, pattern_found

MAX_SCHEMA_BYTES = 64 * 1024
_UNSUPPORTED_BY_STRICT = frozenset(
    {"patternProperties", "unevaluatedProperties", "dependentSchemas", "if", "then", "else", "not", "allOf", "oneOf"}
)


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not pattern_found(pattern, instance):
        yield ValidationError(f"does not match the pattern {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if pattern_found(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


OutputValidator: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties}
)


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` cannot be an output schema, or None when it can."""
    size = len(orjson.dumps(schema))
    if size > MAX_SCHEMA_BYTES:
        return f"the output schema is {size} bytes of JSON; at most {MAX_SCHEMA_BYTES}"
    if schema.get("type") != "object":
        return 'the output schema needs "type": "object" at the top'
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(top)"
        return f"not a valid JSON Schema 2020-12 at {where}: {exc.message[:300]}"
    for pattern in _patterns(schema):
        try:
            check_pattern(pattern)
        except PatternError as exc:
            return f"the pattern {pattern[:100]!r} cannot be used: {exc}"
    return None


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, list):
        for item in node:
            yield from _patterns(item)
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            yield value
        elif key == "patternProperties" and isinstance(value, dict):
            yield from value
            yield from _patterns(list(value.values()))
        elif key in ("properties", "$defs", "definitions", "dependentSchemas") and isinstance(value, dict):
            yield from _patterns(list(value.values()))
        elif key not in ("const", "enum", "default", "examples"):
            yield from _patterns(value)


def strict_compatible(schema: Any) -> bool:
    """Whether a provider's strict mode (OpenAI `strict`, Anthropic structured outputs) takes the schema:
    every object closed (`additionalProperties: false`) with all its properties required, and none of
    the keywords those modes refuse."""
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if _UNSUPPORTED_BY_STRICT & schema.keys():
        return False
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(properties):
            return False
    children = [
        *schema.get("properties", {}).values(),
        *schema.get("$defs", {}).values(),
        schema.get("items"),
        *schema.get("anyOf", []),
        *schema.get("prefixItems", []),
    ]
    return all(strict_compatible(child) for child in children if child is not None)


def _checked(schema: dict[str, Any]) -> dict[str, Any]:
    problem = schema_problem(schema)
    if problem is not None:
        raise PydanticCustomError(INVALID_OUTPUT_SCHEMA, problem)
    return schema


INVALID_OUTPUT_SCHEMA = "invalid_output_schema"
OUTPUT_SCHEMA_UNSUPPORTED = "output_schema_unsupported"
CLAUDE_SDK_NO_SCHEMA = "the claude_sdk runtime does not take an output_schema (docs/structured-output.md)"
OutputSchema = Annotated[
    dict[str, Any],
    AfterValidator(_checked),
    Field(description="JSON Schema 2020-12 (`type: object` at the top, at most 64 KiB) the final answer must meet"),
]
