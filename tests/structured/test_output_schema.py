"""Output schemas: what create time refuses, what strict modes take, and our own check of an answer."""

from __future__ import annotations

import pytest

from app.structured.answer import Accepted, Rejected, Repair, check_answer, judge_answer
from app.structured.schema import MAX_SCHEMA_BYTES, schema_problem, strict_compatible

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "pattern": "^[A-Z]"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "array"}, '"type": "object" at the top'),
        ({"properties": {}}, '"type": "object" at the top'),
        ({"type": "object", "properties": {"a": {"type": "strang"}}}, "not a valid JSON Schema 2020-12 at"),
        ({"type": "object", "minProperties": -1}, "not a valid JSON Schema 2020-12"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}, "cannot be used"),
        ({"type": "object", "patternProperties": {"x{,3}": {}}}, "cannot be used"),
        ({"type": "object", "description": "x" * MAX_SCHEMA_BYTES}, "bytes of JSON; at most 65536"),
    ],
)
def test_a_schema_that_cannot_constrain_an_answer_is_refused_with_its_reason(schema: dict, says: str) -> None:
    problem = schema_problem(schema)
    assert problem is not None
    assert says in problem


def test_a_valid_object_schema_is_accepted() -> None:
    assert schema_problem(CITY) is None


def test_strict_mode_needs_every_object_closed_and_fully_required() -> None:
    assert strict_compatible(CITY)
    assert not strict_compatible({**CITY, "required": ["city"]})
    assert not strict_compatible({k: v for k, v in CITY.items() if k != "additionalProperties"})
    nested = {**CITY, "properties": {**CITY["properties"], "tags": {"type": "array", "items": {"type": "object"}}}}
    assert not strict_compatible({**nested, "required": [*CITY["required"], "tags"]})


def test_an_answer_is_parsed_from_json_or_a_fenced_json_block_and_validated() -> None:
    assert check_answer('{"city": "Oslo", "population": 700000}', CITY).output == {"city": "Oslo", "population": 700000}
    fenced = '```json\n{"city": "Oslo", "population": 1}\n```'
    assert check_answer(fenced, CITY).output == {"city": "Oslo", "population": 1}
    wrong = check_answer('{"city": "oslo", "population": "many"}', CITY)
    assert wrong.output is None
    assert "/population: 'many' is not of type 'integer'" in wrong.errors
    assert "/city: does not match the pattern '^[A-Z]'" in wrong.errors
    assert check_answer("Oslo, about 700k people", CITY).errors[0].startswith("the answer is not JSON")
    assert check_answer("[1, 2]", CITY).errors == ["the answer must be a JSON object"]


def test_a_missed_answer_is_sent_back_once_then_rejected_with_its_errors_and_raw_text() -> None:
    first = judge_answer('{"city": "Oslo"}', CITY, repaired=False)
    assert isinstance(first, Repair)
    assert "/: 'population' is a required property" in first.prompt
    again = judge_answer('{"city": "Oslo"}', CITY, repaired=True)
    assert isinstance(again, Rejected)
    assert again.error["code"] == "output_invalid"
    assert again.error["errors"] == ["/: 'population' is a required property"]
    assert again.error["raw"] == '{"city": "Oslo"}'
    assert judge_answer('{"city": "Oslo", "population": 2}', CITY, repaired=True) == Accepted(
        {"city": "Oslo", "population": 2}
    )
