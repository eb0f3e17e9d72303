from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.tools.base import ToolResult
from app.tools.builtin import BUILTIN_TOOLS, MAX_EXPRESSION_CHARS, run_builtin


async def calculate(expression: Any) -> ToolResult:
    return await run_builtin("calculator", {"expression": expression})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2+2", "4"),
        ("5/2", "2.5"),
        ("4/2", "2.0"),
        ("7//2", "3"),
        ("-7//2", "-4"),
        ("7 % 3", "1"),
        ("2**10", "1024"),
        ("2**-1", "0.5"),
        ("0.1 * 3", "0.30000000000000004"),
        ("1.5 + 2", "3.5"),
        ("-3", "-3"),
        ("+-+3", "-3"),
        ("(1 + 2) * 3", "9"),
        ("  12345678901234567890 * 10 ", "123456789012345678900"),
    ],
)
async def test_calculator_does_arithmetic(expression: str, expected: str) -> None:
    assert await calculate(expression) == ToolResult(content=expected)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("2 ** 3 ** 2", "512"),
        ("-2 ** 2", "-4"),
        ("10 - 4 - 3", "3"),
        ("100 / 10 / 5", "2.0"),
        ("2 * 3 % 4", "2"),
    ],
)
async def test_calculator_follows_operator_precedence(expression: str, expected: str) -> None:
    assert (await calculate(expression)).content == expected


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "abs(-1)",
        "x + 1",
        "(1).real",
        "[1, 2]",
        "'a' * 3",
        "1 if 1 else 2",
        "lambda: 1",
        "True + 1",
        "1j * 2",
        "1 << 4",
        "1 < 2",
        "2 +",
        "",
        "1e999",
    ],
)
async def test_calculator_rejects_anything_but_arithmetic(expression: str) -> None:
    result = await calculate(expression)

    assert result.is_error
    assert result.content


@pytest.mark.parametrize("expression", ["1/0", "1//0", "1%0", "1.0/0.0", "0**-1"])
async def test_division_by_zero_is_an_error_result(expression: str) -> None:
    assert await calculate(expression) == ToolResult(content="division by zero", is_error=True)


@pytest.mark.parametrize("expression", ["2**1001", "2**-1001", "(10**1000)**1000", "9**999*9**999*9**999*9**999"])
async def test_huge_results_are_rejected_before_they_are_computed(expression: str) -> None:
    result = await calculate(expression)

    assert result.is_error
    assert "exponent" in result.content or "too large" in result.content


async def test_float_overflow_is_an_error_result() -> None:
    assert await calculate("1e300 * 1e300") == ToolResult(content="result is too large", is_error=True)
    assert (await calculate("10.0 ** 400")).is_error


async def test_expression_length_is_bounded() -> None:
    long_expression = "+".join(["1"] * (MAX_EXPRESSION_CHARS // 2 + 1))

    result = await calculate(long_expression)

    assert result.is_error
    assert str(MAX_EXPRESSION_CHARS) in result.content


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing required argument 'expression'"),
        ({"expression": 4}, "argument 'expression' must be a string, got int"),
        ({"expression": "1", "precision": 2}, "unexpected argument(s): precision"),
    ],
)
async def test_calculator_reports_bad_arguments_precisely(arguments: dict[str, Any], message: str) -> None:
    assert await run_builtin("calculator", arguments) == ToolResult(content=message, is_error=True)


async def test_echo_returns_its_text() -> None:
    assert await run_builtin("echo", {"text": "  hello\nworld "}) == ToolResult(content="  hello\nworld ")
    assert (await run_builtin("echo", {})).is_error


async def test_current_time_is_utc_iso_8601_by_default() -> None:
    result = await run_builtin("current_time", {})

    assert not result.is_error
    parsed = datetime.fromisoformat(result.content)
    assert parsed.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - parsed) < timedelta(seconds=5)


async def test_current_time_in_an_iana_timezone() -> None:
    result = await run_builtin("current_time", {"timezone": "Asia/Kolkata"})

    assert not result.is_error
    assert datetime.fromisoformat(result.content).utcoffset() == timedelta(hours=5, minutes=30)


@pytest.mark.parametrize("timezone", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "Europe", "", 5])
async def test_current_time_rejects_unknown_timezones(timezone: Any) -> None:
    result = await run_builtin("current_time", {"timezone": timezone})

    assert result.is_error


async def test_an_unknown_builtin_is_an_error_result() -> None:
    assert await run_builtin("shell", {}) == ToolResult(content="unknown built-in tool 'shell'", is_error=True)


def test_every_builtin_publishes_an_object_schema_under_its_own_name() -> None:
    assert set(BUILTIN_TOOLS) == {"calculator", "current_time", "echo"}
    for name, tool in BUILTIN_TOOLS.items():
        assert tool.spec.name == name
        assert tool.spec.input_schema["type"] == "object"
        assert tool.spec.description
