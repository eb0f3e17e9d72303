"""The layout's rules, read from the source with `ast` (every import counts, TYPE_CHECKING ones too).

- The graph (a runtime) reaches the engine only through its port: `app.runtime.port.journal` and the
  event models `app.runtime.port.events`; never `app.turns`.
- No cycles between the packages of the application (graph, turns, sessions, runtime, auth, deps…).
- SQL is built only where statements live: repositories, stores, `app.core`, `app.models`, the
  migrations (and, for now, the whole engine, `app.runtime`).
"""

from __future__ import annotations

import ast
import re
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


SQL_PACKAGES = (
    "app.core",
    "app.models",
    "app.migrations",
    "app.runtime",
)
"""Packages that may build SQL in any of their modules; a narrower home is a narrower prefix here."""
SQL_MODULES = re.compile(r"(^|\.)(repository|store)$|_(repository|store)$|\.store\.")
"""Elsewhere a statement lives in a package's `repository` or `store` module (or a `store` package)."""
SQL_BUILDERS = frozenset(
    {"select", "insert", "update", "delete", "text", "exists", "union", "union_all", "intersect", "except_",
     "values", "lateral", "literal_column", "bindparam", "tuple_", "func", "column", "table"}
)  # fmt: skip
"""The statement constructors (and the raw-SQL pieces) of SQLAlchemy; `Select`-like types are not."""
SQL_TEXT = re.compile(
    r"^\s*(SELECT|WITH)\s+(\d|\*|\w+\()|\bSELECT\s+\S[^;]*?\s+FROM\s+\w|\bINSERT\s+INTO\s+\w"
    r"|\bUPDATE\s+\w+\s+SET\s|\bDELETE\s+FROM\s+\w|\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX)\s|^\s*PRAGMA\s+\w"
)
"""SQL in a string: upper-case keywords in a statement's shape, so prose ("select a model") never matches."""


def is_sql_home(module: str) -> bool:
    return module.startswith(SQL_PACKAGES) or bool(SQL_MODULES.search(module))


def docstrings(tree: ast.AST) -> set[int]:
    """Ids of the string constants that are docstrings (module, class, function, attribute): prose."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                found.add(id(stmt.value))
    return found


def sql_built_in(source: str) -> list[str]:
    """What in this source builds SQL: SQLAlchemy statement constructors it imports or reaches through
    the module (`sa.select`), and string literals shaped like SQL; each with its line."""
    tree = ast.parse(source)
    modules: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name.split(".")[0] == "sqlalchemy")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            found.extend(f"{node.lineno}: imports {a.name}" for a in node.names if a.name in SQL_BUILDERS)
    prose = docstrings(tree)
    reached = (n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in SQL_BUILDERS)
    found.extend(f"{n.lineno}: {ast.unparse(n)}" for n in reached if ast.unparse(n.value) in modules)
    strings = (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    found.extend(f"{n.lineno}: {n.value[:60]!r}" for n in strings if id(n) not in prose and SQL_TEXT.search(n.value))
    return found


def test_the_sql_rule_sees_sql_and_not_prose() -> None:
    source = (
        "import sqlalchemy as sa\n"
        "from sqlalchemy import Select, select as pick\n"
        "from sqlalchemy.dialects.postgresql import insert\n"
        "from sqlalchemy.exc import IntegrityError\n"
        "def f():\n"
        '    """Runs `SELECT id FROM turns` for you."""\n'
        "    sa.update(t)\n"
        "    conn.execute('SELECT 1')\n"
        "    conn.execute(f'DELETE FROM turns WHERE id = {x}')\n"
        "    log.info('select a model from the list, then update the session and delete it')\n"
        "    return 'Update your settings'\n"
    )
    assert sql_built_in(source) == [
        "2: imports select",
        "3: imports insert",
        "7: sa.update",
        "8: 'SELECT 1'",
        "9: 'DELETE FROM turns WHERE id = '",
    ]
    homes = ["app.sessions.repository", "app.credentials.store", "app.runtime.store.turns", "app.core.migrate"]
    assert [m for m in homes if not is_sql_home(m)] == []
    assert [m for m in ("app.sessions.sweeper", "app.restore") if is_sql_home(m)] == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_sql_home(m)))
def test_sql_lives_in_repositories_and_stores(module: str) -> None:
    assert sql_built_in(MODULES[module].read_text()) == [], f"{module} builds SQL"
