"""`context.compaction` and `model.context_window`: defaults, and bad input answered 422 at creation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.factories import scripted_config


def _compaction(**fields: Any) -> dict[str, Any]:
    return scripted_config(context={"compaction": fields})


def _scripted_model(**fields: Any) -> dict[str, Any]:
    return {"provider": "scripted", "script": [{"text": "x"}], **fields}


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (_compaction(trigger_ratio=0), "context.compaction.trigger_ratio"),
        (_compaction(trigger_ratio=-0.5), "context.compaction.trigger_ratio"),
        (_compaction(trigger_ratio=1.01), "context.compaction.trigger_ratio"),
        (_compaction(keep_last_messages=1), "context.compaction.keep_last_messages"),
        (_compaction(keep_last_messages=0), "context.compaction.keep_last_messages"),
        (_compaction(strategy="truncate"), "context.compaction.strategy"),
        (scripted_config(model=_scripted_model(context_window=0)), "model.context_window"),
    ],
)
async def test_bad_compaction_settings_are_422_naming_the_field(
    client: httpx.AsyncClient, alice: dict[str, str], config: dict[str, Any], field: str
) -> None:
    response = await client.post("/agents", json={"name": "bad", "config": config}, headers=alice)
    assert response.status_code == 422, response.text
    locations = [".".join(e["loc"]) for e in response.json()["errors"]]
    assert any(loc.startswith(f"body.config.{field}") for loc in locations), locations


async def test_a_window_smaller_than_the_system_prompt_is_422(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    config = scripted_config(model=_scripted_model(context_window=1024), system_prompt="word " * 1024)
    response = await client.post("/agents", json={"name": "tiny", "config": config}, headers=alice)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert "context window (1024 tokens" in problem["errors"][0]["msg"]
    assert "system prompt (about 1024 tokens)" in problem["errors"][0]["msg"]
    fits = scripted_config(model=_scripted_model(context_window=1025), system_prompt="word " * 1024)
    assert (await client.post("/agents", json={"name": "ok", "config": fits}, headers=alice)).status_code == 201


async def test_a_patch_to_a_too_small_window_is_422_and_keeps_the_current_version(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    created = (await client.post("/agents", json={"name": "a", "config": scripted_config()}, headers=alice)).json()
    small = scripted_config(model=_scripted_model(context_window=1024), system_prompt="word " * 2000)
    patched = await client.patch(f"/agents/{created['id']}", json={"config": small}, headers=alice)
    assert patched.status_code == 422
    assert (await client.get(f"/agents/{created['id']}", headers=alice)).json()["version"] == 1


async def test_defaults_are_stored_with_the_config(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    config = _compaction(strategy="window", trigger_ratio=1, keep_last_messages=2)
    config["model"]["context_window"] = 4096
    agent = (await client.post("/agents", json={"name": "w", "config": config}, headers=alice)).json()
    assert agent["config"]["context"]["compaction"] == {"strategy": "window", "trigger_ratio": 1.0,
                                                        "keep_last_messages": 2}  # fmt: skip
    assert agent["config"]["model"]["context_window"] == 4096
    plain = (await client.post("/agents", json={"name": "p", "config": scripted_config()}, headers=alice)).json()
    assert plain["config"]["context"]["compaction"] == {"strategy": "summarize", "trigger_ratio": 0.8,
                                                        "keep_last_messages": 6}  # fmt: skip
