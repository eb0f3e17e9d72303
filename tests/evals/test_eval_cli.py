"""`agent-runtime eval run` against a live service: the table, the JSON, and the exit status CI reads."""

from __future__ import annotations

import asyncio
import json
import sys

import httpx

from app.settings import Settings
from tests.conftest import TEST_SECRET
from tests.factories import create_agent
from tests.turns.loopback import serve_on_loopback

TIMEOUT_SECONDS = 120


async def _eval(base_url: str, token: str, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "app.cli", "eval", "run", "--url", base_url, "--token", token, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"AUTH_JWT_SECRET": TEST_SECRET, "PATH": ""},
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=TIMEOUT_SECONDS)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _agent_config(text: str) -> dict[str, object]:
    return {"model": {"provider": "scripted", "script": [{"text": text}]}, "system_prompt": "Answer."}


async def test_a_regression_fails_the_build_and_a_good_version_passes(
    settings: Settings, alice: dict[str, str]
) -> None:
    token = alice["Authorization"].removeprefix("Bearer ")
    async with serve_on_loopback(settings) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as client:
            agent = await create_agent(client, alice, _agent_config("a good answer"), name="support-bot")
            patched = await client.patch(
                f"/agents/{agent['id']}", json={"config": _agent_config("a poor reply")}, headers=alice
            )
            assert patched.json()["version"] == 2
            items = [{"input": f"q{i}", "expected": [{"type": "contains", "value": "good"}]} for i in range(3)]
            created = await client.post("/datasets", json={"name": "support-smoke", "items": items}, headers=alice)
            assert created.status_code == 201, created.text

        code, out, err = await _eval(
            base_url, token, "--dataset", "support-smoke", "--agent", "support-bot", "--version", "2",
            "--baseline", "1", "--fail-under", "0.9",
        )  # fmt: skip
        assert code == 1, (out, err)
        assert "mean score 0.00 is under 0.9" in out
        assert "regression: mean 0.00 against the baseline's 1.00 (3 item(s) worse, 0 better)" in out
        assert "6/6 completed" in err

        code, out, err = await _eval(
            base_url, token, "--dataset", created.json()["id"], "--agent", agent["id"], "--version", "1",
            "--fail-under", "0.9", "--json",
        )  # fmt: skip
        assert code == 0, (out, err)
        result = json.loads(out)
        assert result["passed"] is True
        assert result["eval"]["summary"]["candidate"]["checks"]["contains"]["pass_rate"] == 1.0
        assert [i["score"] for i in result["items"]] == [1.0, 1.0, 1.0]

        code, out, err = await _eval(base_url, token, "--dataset", "nope", "--agent", "support-bot", "--version", "1")
        assert code == 2
        assert err.strip() == "error: no dataset named 'nope'"
