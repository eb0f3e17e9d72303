"""The `judge` check through a loopback model that speaks OpenAI's wire format, reached with the
tenant's own credential: the score and reason it gives, and its tokens stored as `eval_judge` usage."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from app.models import Usage
from app.settings import EvalSettings, ProviderSettings
from tests.conftest import TokenFactory, make_settings, running_app
from tests.llm_servers import llm_server
from tests.providers import openai_wire

VERDICT = {"score": 0.8, "reason": "right, but terse"}


def _verdict(body: dict[str, Any], answered: bool) -> list[bytes]:
    chunks = [*openai_wire.text_chunks("Here: ", json.dumps(VERDICT)), openai_wire.chunk(finish="stop")]
    return [openai_wire.sse([*chunks, openai_wire.usage_chunk(40, 12)])]


@pytest.fixture(params=["postgresql", "sqlite"])
async def judged_app(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    url = database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'app.db'}"
    settings = make_settings(
        url, tmp_path, providers=ProviderSettings(allowed_hosts=["127.0.0.1"]), evals=EvalSettings(poll_seconds=0.2)
    )
    async with running_app(settings) as pair:
        yield pair


async def test_a_judge_model_grades_the_answer_and_its_usage_is_counted(
    judged_app: tuple[FastAPI, httpx.AsyncClient], tenant: str, auth_headers: TokenFactory
) -> None:
    app, client = judged_app
    admin = auth_headers(tenant, "ops", roles=["admin"])
    async with llm_server("openai", answer_with=_verdict) as judge:
        stored = await client.put(
            "/credentials/openai",
            json={"provider": "openai", "api_key": "sk-tenant-judge-0123456789abcdef", "base_url": judge.url},
            headers=admin,
        )
        assert stored.status_code == 201, stored.text
        config = {"model": {"provider": "scripted", "script": [{"text": "Paris."}]}, "system_prompt": "Answer."}
        agent = (await client.post("/agents", json={"name": "geo", "config": config}, headers=admin)).json()
        check = {"type": "judge", "rubric": "Is the capital right?", "model": {"provider": "openai", "name": "judge-1"}}
        items = [{"input": "Capital of France?", "expected": [check]}]
        dataset = (await client.post("/datasets", json={"name": "geo", "items": items}, headers=admin)).json()
        body = {"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": 1}
        run = (await client.post("/evals", json=body, headers=admin)).json()
        deadline = time.monotonic() + 60
        while (current := (await client.get(f"/evals/{run['id']}", headers=admin)).json())["status"] != "completed":
            assert current["status"] in ("queued", "running"), current
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
    (item,) = (await client.get(f"/evals/{run['id']}/items", headers=admin)).json()["items"]
    assert item["scores"] == [{"type": "judge", "score": 0.8, "reason": "right, but terse"}]
    (asked,) = judge.requests
    prompt = json.dumps(asked.body)
    for part in ("Is the capital right?", "Capital of France?", "Paris."):
        assert part in prompt
    assert asked.headers["authorization"] == "Bearer sk-tenant-judge-0123456789abcdef"
    async with app.state.container.session_factory() as db:
        rows = (await db.execute(select(Usage).where(Usage.turn_id == uuid.UUID(item["turn_id"])))).scalars().all()
    judged = [(u.kind, u.model, u.input_tokens, u.output_tokens) for u in rows if u.kind == "eval_judge"]
    assert judged == [("eval_judge", "judge-1", 40, 12)]
