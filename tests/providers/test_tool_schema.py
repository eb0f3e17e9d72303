"""One agent's tool schemas and names, made acceptable to every provider's API."""

from __future__ import annotations

from app.providers.base import ToolSpec
from app.providers.tool_schema import ToolNames, object_schema


def test_local_references_are_inlined_and_annotations_dropped() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"where": {"$ref": "#/$defs/place", "description": "target"}},
        "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "$comment": "x"}},
    }

    assert object_schema(schema) == {
        "type": "object",
        "properties": {
            "where": {"type": "object", "properties": {"city": {"type": "string"}}, "description": "target"}
        },
    }


def test_a_recursive_reference_stops_at_a_bounded_depth() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/definitions/node"}},
        "definitions": {"node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/node"}}}},
    }

    resolved = object_schema(schema)

    depth, node = 0, resolved["properties"]["node"]
    while "properties" in node:
        node, depth = node["properties"]["child"], depth + 1
    assert 10 <= depth <= 20
    assert "$ref" not in str(resolved)


def test_a_schema_that_is_not_an_object_becomes_an_empty_object_schema() -> None:
    assert object_schema({}) == {"type": "object", "properties": {}}
    assert object_schema({"type": "string"}) == {"type": "object", "properties": {}}


def test_names_keep_their_spelling_where_allowed_and_get_stable_unique_aliases_elsewhere() -> None:
    specs = [ToolSpec(n, "", {}) for n in ("calculator", "gh__create.issue", "gh__create/issue", "9lives")]

    openai = ToolNames.for_tools("openai", specs)
    gemini = ToolNames.for_tools("gemini", specs)

    assert openai.wire("calculator") == "calculator"
    assert openai.wire("9lives") == "9lives"
    assert gemini.wire("gh__create.issue") == "gh__create.issue"
    aliases = [openai.wire("gh__create.issue"), openai.wire("gh__create/issue"), gemini.wire("9lives")]
    assert len(set(aliases)) == 3
    assert all(len(a) <= 64 and a[0].isalpha() for a in aliases)
    assert [openai.ours(aliases[0]), openai.ours(aliases[1]), gemini.ours(aliases[2])] == [
        "gh__create.issue", "gh__create/issue", "9lives"]  # fmt: skip
    assert ToolNames.for_tools("openai", specs).wire("gh__create/issue") == openai.wire("gh__create/issue")
    assert openai.ours("never_offered") == "never_offered"
