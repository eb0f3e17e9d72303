"""The layout's rules, read from the source with `ast` (every import counts, TYPE_CHECKING ones too).

- The graph (a runtime) reaches the engine only through its port: `app.runtime.port.journal` and the
  event models `app.runtime.port.events`; never `app.turns`.
- No cycles between the packages of the application (graph, turns, sessions, runtime, auth, deps…).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"
PORT = {"app.runtime.port.journal", "app.runtime.port.events"}
"""The engine's port: modules any runtime may import. They import no engine code themselves."""


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every `app.…` module a file imports, at any depth of the file (functions, TYPE_CHECKING blocks)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("app"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("app"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(path): path for path in APP.rglob("*.py")}
IMPORTS = {name: {i for i in imports_of(path) if i in MODULES} for name, path in MODULES.items()}


def package_of(module: str) -> str:
    """`app.runtime.port.journal` → `runtime` (port modules are a node of their own); `app.deps` → `deps`."""
    if module in PORT:
        return "runtime.port"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "app"


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in IMPORTS.items():
        source = package_of(module)
        graph.setdefault(source, set()).update(package_of(t) for t in targets if package_of(t) != source)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle's first sighting by depth-first search (enough to name what to break)."""
    found: list[list[str]] = []
    for start in sorted(graph):
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    found.append(path)
                elif nxt not in path and nxt > start:
                    stack.append((nxt, [*path, nxt]))
    return found


def test_the_rules_see_the_modules_they_judge() -> None:
    assert "app.graph.nodes.llm" in MODULES
    assert "app.runtime.port.journal" in IMPORTS["app.graph.context"]
    assert "app.runtime.manager" in IMPORTS["app.turns.service"]


RUNTIMES = ("app.graph", "app.claude_sdk", "app.autonomy")
"""Packages that implement `TurnRuntime`; a new runtime's package joins this list."""


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(RUNTIMES)))
def test_a_runtime_reaches_the_engine_only_through_its_port(module: str) -> None:
    engine = {i for i in IMPORTS[module] if i.startswith(("app.runtime", "app.turns"))}
    assert engine <= PORT, f"{module} imports {sorted(engine - PORT)}"


@pytest.mark.parametrize("module", sorted(PORT))
def test_the_port_imports_no_engine_code(module: str) -> None:
    engine = {i for i in IMPORTS[module] if i.startswith(("app.runtime", "app.turns", "app.graph"))}
    assert engine <= PORT, f"{module} imports {sorted(engine - PORT)}"


def test_no_package_cycles() -> None:
    assert cycles(package_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]


ROUTERS = sorted(m for m in MODULES if m.endswith(".router") or m in {"app.health", "app.jwks"})


@pytest.mark.parametrize("module", ROUTERS)
def test_no_router_imports_a_router(module: str) -> None:
    assert not IMPORTS[module] & set(ROUTERS), f"{module} imports {sorted(IMPORTS[module] & set(ROUTERS))}"
