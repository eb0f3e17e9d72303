"""JSON Schema 2020-12 checks of user-written schemas, with every `pattern` run by RE2.

jsonschema's own `pattern` and `patternProperties` use Python's backtracking engine, so a user's
schema could stall the process; here both go through app/governance/patterns.py instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError

from app.governance.patterns import PatternError, pattern_found


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, str):
        return
    try:
        found = pattern_found(pattern, instance)
    except (PatternError, UnicodeEncodeError):
        found = False
    if not found:
        yield ValidationError("does not match the schema's pattern")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                matches = pattern_found(pattern, key)
            except (PatternError, UnicodeEncodeError):
                matches = False
            if matches:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


SafeValidator = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties}
)


def schema_problem(schema: Any) -> str | None:
    """Why a schema is not a valid 2020-12 schema, or None."""
    try:
        SafeValidator.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None


def violations(schema: Any, output: Any, text: str) -> list[str]:
    """What is wrong with the structured `output` (or, without one, the answer parsed as JSON)."""
    problem = schema_problem(schema)
    if problem is not None:
        return [f"the check's schema is invalid: {problem}"]
    if output is None:
        try:
            output = orjson.loads(text)
        except orjson.JSONDecodeError:
            return ["the answer is not JSON"]
    found = [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in SafeValidator(schema).iter_errors(output)
    ]
    return found
