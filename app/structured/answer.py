"""Our own check of a final answer against the turn's output schema, whatever the provider promised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.structured.schema import OutputValidator

MAX_ERRORS = 20
MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class Checked:
    output: dict[str, Any] | None
    """The parsed object; None when the answer does not meet the schema."""
    errors: list[str]


def check_answer(text: str, schema: dict[str, Any]) -> Checked:
    """Parse the answer as JSON (a Markdown code fence around it is tolerated) and validate it."""
    try:
        value = orjson.loads(_unfenced(text))
    except orjson.JSONDecodeError as exc:
        return Checked(None, [f"the answer is not JSON: {str(exc)[:MAX_ERROR_CHARS]}"])
    if not isinstance(value, dict):
        return Checked(None, ["the answer must be a JSON object"])
    errors = []
    for error in OutputValidator(schema).iter_errors(value):
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        errors.append(f"{where}: {error.message[:MAX_ERROR_CHARS]}")
        if len(errors) == MAX_ERRORS:
            break
    return Checked(None if errors else value, errors)


def _unfenced(text: str) -> str:
    stripped = text.strip()
    if not stripped.startswith("```"):
        return stripped
    body = stripped.removeprefix("```").removesuffix("```")
    first, _, rest = body.partition("\n")
    return rest if first.strip().isalpha() or not first.strip() else body


def repair_prompt(errors: list[str]) -> str:
    """What the model is told when its answer missed the schema (the one repair attempt)."""
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        "Your previous answer does not match the required JSON Schema:\n"
        f"{listed}\n"
        "Answer again with only the corrected JSON object."
    )


def schema_instruction(schema: dict[str, Any]) -> str:
    """The schema in words, for a provider that is not asked natively."""
    return "Reply with only a JSON object that matches this JSON Schema:\n" + orjson.dumps(schema).decode()


@dataclass(frozen=True, slots=True)
class Accepted:
    output: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Repair:
    prompt: str
    """The user message that sends the answer back with what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Rejected:
    error: dict[str, Any]
    """`turn.ended.error`: code `output_invalid`, the validation errors and the raw answer."""


def judge_answer(text: str, schema: dict[str, Any], *, repaired: bool) -> Accepted | Repair | Rejected:
    """A final answer against the schema: accepted, sent back once for repair, or the turn fails."""
    checked = check_answer(text, schema)
    if checked.output is not None:
        return Accepted(checked.output)
    if not repaired:
        return Repair(repair_prompt(checked.errors))
    message = "the final answer does not match the output schema after one repair attempt"
    return Rejected({"code": OUTPUT_INVALID, "message": message, "errors": checked.errors, "raw": text})


OUTPUT_INVALID = "output_invalid"
