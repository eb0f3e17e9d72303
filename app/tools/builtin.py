"""Built-in tools (`builtin:NAME`): calculator, current_time, echo.

`run_builtin` never raises: unknown tools, bad arguments and failed evaluations come back as error
results the model can read and correct.
"""

from __future__ import annotations

import ast
import asyncio
import math
import operator
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.providers.base import ToolSpec
from app.tools.base import ToolResult

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 1000
MAX_INT_BITS = 10_000
"""Bounds every intermediate integer (about 3,000 digits), so no expression can hog the event loop."""

Number = int | float
_BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_TIMEZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")


class ToolFailure(Exception):
    """An expected failure whose message goes back to the model as an error result."""


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    spec: ToolSpec
    run: Callable[[dict[str, Any]], Awaitable[str]]


async def run_builtin(name: str, arguments: dict[str, Any]) -> ToolResult:
    tool = BUILTIN_TOOLS.get(name)
    if tool is None:
        return ToolResult(content=f"unknown built-in tool {name!r}", is_error=True)
    if not isinstance(arguments, dict):
        return ToolResult(content="arguments must be a JSON object", is_error=True)
    try:
        return ToolResult(content=await tool.run(arguments))
    except ToolFailure as exc:
        return ToolResult(content=str(exc), is_error=True)


def _check_names(arguments: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise ToolFailure(f"unexpected argument(s): {', '.join(unknown)}")


def _optional_string(arguments: dict[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if value is not None and not isinstance(value, str):
        raise ToolFailure(f"argument {name!r} must be a string, got {type(value).__name__}")
    return value


def _required_string(arguments: dict[str, Any], name: str) -> str:
    value = _optional_string(arguments, name)
    if value is None:
        raise ToolFailure(f"missing required argument {name!r}")
    return value


async def _calculator(arguments: dict[str, Any]) -> str:
    _check_names(arguments, {"expression"})
    return format_number(evaluate(_required_string(arguments, "expression")))


def evaluate(expression: str) -> Number:
    """Arithmetic on int and float literals by walking the syntax tree; nothing is ever executed."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolFailure(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    if not expression.strip():
        raise ToolFailure("expression is empty")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ToolFailure(f"invalid expression: {exc.msg if isinstance(exc, SyntaxError) else exc}") from exc
    try:
        return _evaluate_node(tree.body)
    except ZeroDivisionError as exc:
        raise ToolFailure("division by zero") from exc
    except OverflowError as exc:
        raise ToolFailure("result is too large") from exc
    except RecursionError as exc:
        raise ToolFailure("expression is nested too deeply") from exc


def _evaluate_node(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        return _literal(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPERATORS:
        result: Number = _UNARY_OPERATORS[type(node.op)](_evaluate_node(node.operand))
        return result
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPERATORS:
        return _binary(node.op, _evaluate_node(node.left), _evaluate_node(node.right))
    raise ToolFailure(f"unsupported syntax: {type(node).__name__} (only numbers and + - * / // % ** ( ))")


def _literal(value: object) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolFailure(f"unsupported literal {value!r}: only integers and decimals are allowed")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolFailure("number is too large")
    return value


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Pow):
        _check_power(left, right)
    result: Number = _BINARY_OPERATORS[type(op)](left, right)
    if isinstance(result, complex):
        raise ToolFailure("result is not a real number")
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        raise ToolFailure("result is too large")
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolFailure("result is too large")
    return result


def _check_power(base: Number, exponent: Number) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolFailure(f"exponent {exponent} is out of range (-{MAX_EXPONENT} to {MAX_EXPONENT})")
    if isinstance(base, int) and isinstance(exponent, int) and exponent * base.bit_length() > MAX_INT_BITS:
        raise ToolFailure("result is too large")


def format_number(value: Number) -> str:
    return repr(value)


async def _current_time(arguments: dict[str, Any]) -> str:
    _check_names(arguments, {"timezone"})
    name = _optional_string(arguments, "timezone")
    zone = UTC if name is None else await _load_zone(name)
    return datetime.now(zone).isoformat(timespec="seconds")


async def _load_zone(name: str) -> ZoneInfo:
    if len(name) > 64 or not _TIMEZONE_NAME.fullmatch(name):
        raise ToolFailure(f"unknown timezone {name!r}: use an IANA name such as 'Europe/Paris'")
    try:
        # The first load of a zone reads the tz database from disk.
        return await asyncio.to_thread(ZoneInfo, name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ToolFailure(f"unknown timezone {name!r}: use an IANA name such as 'Europe/Paris'") from exc


async def _echo(arguments: dict[str, Any]) -> str:
    _check_names(arguments, {"text"})
    return _required_string(arguments, "text")


def _object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


BUILTIN_TOOLS: dict[str, BuiltinTool] = {
    "calculator": BuiltinTool(
        spec=ToolSpec(
            name="calculator",
            description=(
                "Evaluate an arithmetic expression exactly. Supports integers, decimals, parentheses and "
                "+ - * / // % ** (exponent at most 1000). Returns the result as text."
            ),
            input_schema=_object_schema(
                {
                    "expression": {
                        "type": "string",
                        "maxLength": MAX_EXPRESSION_CHARS,
                        "description": "For example: (2 + 3) * 4 / 5",
                    }
                },
                ["expression"],
            ),
        ),
        run=_calculator,
    ),
    "current_time": BuiltinTool(
        spec=ToolSpec(
            name="current_time",
            description="The current date and time as ISO-8601, in UTC or in the given IANA timezone.",
            input_schema=_object_schema(
                {"timezone": {"type": "string", "description": "IANA name, e.g. 'Europe/Paris'"}},
                [],
            ),
        ),
        run=_current_time,
    ),
    "echo": BuiltinTool(
        spec=ToolSpec(
            name="echo",
            description="Return the given text unchanged.",
            input_schema=_object_schema({"text": {"type": "string"}}, ["text"]),
        ),
        run=_echo,
    ),
}
