"""The `claude` extra: the service installs, starts and runs turns without claude-agent-sdk; the
`claude_sdk` runtime is then refused at agent write (422 `runtime_unavailable`) and fails its turns."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import tomllib
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from fastapi import FastAPI

from app.claude_sdk.extra import NOT_INSTALLED, SDK_PACKAGE, sdk_missing
from tests.conftest import make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn

ROOT = Path(__file__).resolve().parents[1]
CLAUDE_CONFIG = {"model": {"provider": "anthropic", "name": "claude-sonnet-4-5"}, "runtime": "claude_sdk"}
UNLOADED = (SDK_PACKAGE, "app.claude_sdk")
"""What an install without the extra has never imported: the SDK, and our runtime built on it."""


def _project() -> dict[str, object]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])


def _names(requirements: Sequence[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip() for r in requirements}


def test_the_sdk_is_the_claude_extra_not_a_dependency_of_the_service() -> None:
    project = _project()
    extras = project["optional-dependencies"]
    assert isinstance(extras, dict)
    assert "claude-agent-sdk" not in _names(project["dependencies"])  # type: ignore[arg-type]
    assert _names(extras["claude"]) == {"claude-agent-sdk"}
    assert any("claude" in r for r in extras["dev"] if r.startswith("agent-runtime["))


def test_the_default_image_lock_has_no_sdk_and_the_claude_lock_has_it() -> None:
    assert "\nclaude-agent-sdk==" not in (ROOT / "requirements.lock").read_text()
    assert "\nclaude-agent-sdk==" in (ROOT / "requirements-claude.lock").read_text()


class _NoSdk(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == SDK_PACKAGE or fullname.startswith(SDK_PACKAGE + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def _unloaded(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in UNLOADED)


@contextmanager
def without_claude_agent_sdk() -> Iterator[None]:
    """As in an install without the extra: importing the SDK fails; on the way out, the modules of
    before are back, and whatever was imported meanwhile is forgotten."""
    saved = {name: module for name, module in sys.modules.items() if _unloaded(name)}
    package = sys.modules["app"]
    runtime_package = package.__dict__.get("claude_sdk")
    for name in saved:
        del sys.modules[name]
    blocker = _NoSdk()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)
        for name in [n for n in sys.modules if _unloaded(n)]:
            del sys.modules[name]
        sys.modules.update(saved)
        if runtime_package is not None:
            package.claude_sdk = runtime_package  # type: ignore[attr-defined]


def test_the_blocker_makes_the_sdk_absent_while_it_lasts() -> None:
    with without_claude_agent_sdk(), pytest.raises(ModuleNotFoundError) as missing:
        importlib.import_module("app.claude_sdk.runtime")
    assert missing.value.name == SDK_PACKAGE
    assert importlib.import_module("app.claude_sdk.runtime").ClaudeSdkRuntime


@pytest.fixture
async def without_sdk(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """An app of this test's own on the shared database, started without claude-agent-sdk."""
    with without_claude_agent_sdk():
        async with running_app(make_settings(database_url, tmp_path)) as pair:
            assert SDK_PACKAGE not in sys.modules
            yield pair


async def test_the_service_starts_and_runs_turns_without_the_sdk(
    without_sdk: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    app, client = without_sdk
    assert app.state.container.claude_sdk is None
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).status_code == 200
    agent = await create_agent(client, alice, scripted_config({"text": "still here"}))
    session = await create_session(client, alice, agent["id"])
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
    [ended] = [f.data for f in frames if f.event == "turn.ended"]
    assert ended["status"] == "completed", ended
    assert ended["final_output"] == "still here"


async def test_a_claude_sdk_agent_is_refused_without_the_sdk(
    without_sdk: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    _, client = without_sdk
    response = await client.post("/agents", json={"name": "coder", "config": CLAUDE_CONFIG}, headers=alice)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "runtime_unavailable"
    assert body["type"].endswith("/runtime-unavailable")
    assert body["detail"] == NOT_INSTALLED
    assert "agent-runtime[claude]" in body["detail"]
    assert "WITH_CLAUDE=true" in body["detail"]

    agent = await create_agent(client, alice)
    patched = await client.patch(f"/agents/{agent['id']}", json={"config": CLAUDE_CONFIG}, headers=alice)
    assert patched.status_code == 422, patched.text
    assert patched.json()["code"] == "runtime_unavailable"
    assert (await client.get(f"/agents/{agent['id']}", headers=alice)).json()["version"] == 1


async def test_a_turn_of_a_claude_sdk_agent_fails_without_the_sdk(
    client: httpx.AsyncClient, without_sdk: tuple[FastAPI, httpx.AsyncClient], alice: dict[str, str]
) -> None:
    """The agent was written by a replica with the extra (the shared app); this one lacks it."""
    agent = await create_agent(client, alice, CLAUDE_CONFIG)
    session = await create_session(client, alice, agent["id"])
    _, bare = without_sdk
    frames = await read_turn(bare, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
    [ended] = [f.data for f in frames if f.event == "turn.ended"]
    assert ended["status"] == "failed"
    assert ended["error"] == {"code": "runtime_unavailable", "message": NOT_INSTALLED}


def test_only_the_sdks_own_absence_counts_as_not_installed() -> None:
    assert sdk_missing(ModuleNotFoundError(name=SDK_PACKAGE))
    assert sdk_missing(ModuleNotFoundError(name=f"{SDK_PACKAGE}.types"))
    assert not sdk_missing(ModuleNotFoundError(name="mcp"))
    assert not sdk_missing(
        ImportError("cannot import name 'ClaudeSDKClient' from 'claude_agent_sdk'", name=SDK_PACKAGE)
    )
    assert not sdk_missing(ImportError("cannot import name 'X' from 'app.claude_sdk.turn'"))
