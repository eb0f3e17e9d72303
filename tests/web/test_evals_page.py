"""The evals page in headless Chromium: a run's pass rate per check beside its baseline's, and its items."""

from __future__ import annotations

import asyncio
import time

import httpx
from playwright.async_api import Browser, expect

from app.settings import Settings
from tests.factories import create_agent
from tests.turns.loopback import serve_on_loopback


def _config(text: str) -> dict[str, object]:
    return {"model": {"provider": "scripted", "script": [{"text": text}]}, "system_prompt": "Answer."}


async def test_the_page_shows_a_runs_checks_beside_its_baseline_and_its_items(
    settings: Settings, alice: dict[str, str], browser: Browser
) -> None:
    async with serve_on_loopback(settings) as base_url:
        async with httpx.AsyncClient(base_url=base_url, headers=alice) as client:
            agent = await create_agent(client, alice, _config("a good answer"))
            await client.patch(f"/agents/{agent['id']}", json={"config": _config("a poor reply")})
            items = [{"input": "q", "expected": [{"type": "contains", "value": "good"}]}]
            dataset = (await client.post("/datasets", json={"name": "page", "items": items})).json()
            body = {"dataset_id": dataset["id"], "agent_id": agent["id"], "agent_version": 2, "baseline_version": 1}
            run = (await client.post("/evals", json=body)).json()
            deadline = time.monotonic() + 60
            while (await client.get(f"/evals/{run['id']}")).json()["status"] != "completed":
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
        page = await browser.new_page(viewport={"width": 1100, "height": 800})
        page.set_default_timeout(20_000)
        await page.goto(f"{base_url}/web/evals")
        await expect(page.locator("#signed-out")).to_be_visible()
        await page.evaluate("token => sessionStorage.setItem('token', token)", alice["Authorization"][7:])
        await page.reload()
        await expect(page.locator("#eval-title")).to_have_text(f"Eval {run['id'][:8]} · v2 against v1")
        await expect(page.locator("#checks-head th")).to_have_text(["Check", "v2", "v1"])
        row = page.locator("#checks tbody tr", has_text="contains")
        await expect(row.locator(".rate")).to_have_text([" 0%", " 100%"])
        assert await row.locator("meter").nth(1).get_attribute("aria-label") == "contains, v1"
        await expect(page.locator("#comparison")).to_have_text("Against v1: 0 better, 1 worse, 0 the same.")
        await expect(page.locator("#items tbody tr")).to_have_count(2)
        await expect(page.locator("#items tbody tr").nth(1)).to_contain_text("contains: the value is missing")
