"""One agent's tools on every provider: JSON Schemas and tool names each API accepts.

Built-in tools and MCP servers describe their inputs as JSON Schema (draft 2020-12, sometimes with
`$defs`/`$ref`). OpenAI and Anthropic want an object schema (OpenAI with `properties`); Gemini takes a
JSON Schema too but refuses references it cannot resolve and some annotations. Names: OpenAI and
Anthropic allow `[A-Za-z0-9_-]{1,64}`, Gemini `[A-Za-z_][A-Za-z0-9_.:-]{0,63}`; an MCP tool may be named anything,
so a name the API refuses is sent under a safe alias and mapped back when the model calls it.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.providers.base import ToolSpec

_MAX_REF_DEPTH = 16
_DROPPED_KEYS = frozenset({"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor"})
_NAME_RULES = {
    "anthropic": re.compile(r"^[A-Za-z0-9_-]{1,64}$"),
    "openai": re.compile(r"^[A-Za-z0-9_-]{1,64}$"),
    "gemini": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A self-contained object schema: local `$ref`s inlined, annotations the APIs refuse dropped."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    resolved: dict[str, Any] = _inline(schema, defs, depth=0)
    resolved.pop("$defs", None)
    resolved.pop("definitions", None)
    if resolved.get("type") != "object":
        return {"type": "object", "properties": {}}
    resolved.setdefault("properties", {})
    return resolved


def _inline(node: Any, defs: dict[str, Any], *, depth: int) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, depth=depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _local_target(ref, defs)
        if target is None or depth >= _MAX_REF_DEPTH:
            # An unresolvable or recursive reference: any value is better than an API refusing the schema.
            return {key: value for key, value in node.items() if key not in ("$ref", *_DROPPED_KEYS)}
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return _inline({**copy.deepcopy(target), **siblings}, defs, depth=depth + 1)
    return {key: _inline(value, defs, depth=depth) for key, value in node.items() if key not in _DROPPED_KEYS}


def _local_target(ref: str, defs: dict[str, Any]) -> dict[str, Any] | None:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            target = defs.get(ref.removeprefix(prefix))
            return target if isinstance(target, dict) else None
    return None


@dataclass(slots=True)
class ToolNames:
    """Our tool names and the names one provider sees, both ways."""

    provider: str
    to_wire: dict[str, str] = field(default_factory=dict)
    from_wire: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_tools(cls, provider: str, specs: Sequence[ToolSpec]) -> ToolNames:
        names = cls(provider)
        for spec in specs:
            names.wire(spec.name)
        return names

    def wire(self, name: str) -> str:
        """The name the provider accepts for our tool `name` (stable within a request)."""
        known = self.to_wire.get(name)
        if known is not None:
            return known
        alias = name if _NAME_RULES[self.provider].match(name) else _alias(name)
        self.to_wire[name] = alias
        self.from_wire[alias] = name
        return alias

    def ours(self, wire_name: str) -> str:
        """Our name for what the model called; an unknown name stays as it is (the gate refuses it)."""
        return self.from_wire.get(wire_name, wire_name)


def _alias(name: str) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    safe = _UNSAFE.sub("_", name).lstrip("0123456789.-:") or "tool"
    return f"{safe[:55]}_{digest}"
