"""The JSON guard's rules on their own: what a body may hold, and where it says the fault is."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.core.bounds import JSON_INT_MAX, MAX_JSON_DEPTH
from app.core.json_guard import decode_json, find_violation


def nested(depth: int) -> Any:
    document: Any = "leaf"
    for _ in range(depth):
        document = [document]
    return document


@pytest.mark.parametrize(
    "document",
    [
        {"text": "héllo ☺ 𝄞", "n": JSON_INT_MAX, "m": -JSON_INT_MAX, "x": 1.5e300, "ok": True, "none": None},
        nested(MAX_JSON_DEPTH),
        {"": ["", {}, []]},
    ],
)
def test_what_the_service_keeps_passes(document: Any) -> None:
    assert find_violation(decode_json(json.dumps(document).encode())) is None


@pytest.mark.parametrize(
    ("raw", "loc", "kind"),
    [
        ('{"a": {"b": ["x", "y\\u0000z"]}}', ("a", "b", 1), "string_nul"),
        ('{"a": {"b\\u0000": 1}}', ("a",), "string_nul"),
        ('{"a": "\\ud800"}', ("a",), "string_surrogate"),
        ('{"a": "\\udfff tail"}', ("a",), "string_surrogate"),
        (f'{{"n": {JSON_INT_MAX + 1}}}', ("n",), "int_out_of_range"),
        (f'{{"n": [0, -{JSON_INT_MAX + 1}]}}', ("n", 1), "int_out_of_range"),
        ('{"n": ' + "9" * 5000 + "}", ("n",), "int_out_of_range"),
        ('{"x": 1e400}', ("x",), "float_not_finite"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), (0,) * MAX_JSON_DEPTH, "too_deeply_nested"),
    ],
)
def test_the_first_value_the_service_would_not_keep_is_named(raw: str, loc: tuple[Any, ...], kind: str) -> None:
    violation = find_violation(decode_json(raw.encode()))

    assert violation is not None
    assert (violation.loc, violation.type) == (loc, kind)


@pytest.mark.parametrize("raw", ["NaN", '{"x": Infinity}', '{"x": -Infinity}'])
def test_non_json_constants_are_refused_while_decoding(raw: str) -> None:
    with pytest.raises(ValueError, match="is not JSON"):
        decode_json(raw.encode())
