"""Editing and regenerating in the page, over the fork and regenerate routes (docs/branching.md):
an answer made again keeps its earlier versions behind "‹ 2/3 ›"; editing the latest message
regenerates with the new text; editing an earlier one continues in a fork, the original untouched."""

from __future__ import annotations

from pathlib import Path

import httpx
from playwright.async_api import Browser, expect

from app.settings import Settings
from tests.turns.loopback import serve_on_loopback
from tests.web.conftest import create_agent_and_session, open_page, screenshot, send, sign_in_locally

ANSWERS = {
    "model": {"provider": "scripted", "script": [{"text": f"Answer {n}."} for n in range(1, 7)]},
    "tools": [],
}  # the n-th answer of a conversation's kept history: a regenerated turn answers as the one it replaces


async def test_regenerate_and_edit_keep_every_version(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        await sign_in_locally(page)
        await create_agent_and_session(page, "answers", ANSWERS)
        await send(page, "first question")
        answers = page.locator("#transcript li.turn:not([hidden]) .msg-assistant")
        shown = page.locator("#transcript > li.turn:not([hidden])")
        questions = page.locator("#transcript li.turn:not([hidden]) .msg-user .text")
        label = page.locator(".version-label:visible")
        await expect(answers).to_have_text(["Answer 1."])
        first = await shown.get_attribute("data-turn")

        await page.get_by_role("button", name="Regenerate").click()  # the scripted model answers alike
        await expect(label).to_have_text("2/2")
        second = await shown.get_attribute("data-turn")
        assert second != first
        await expect(answers).to_have_text(["Answer 1."])
        await page.get_by_role("button", name="Previous version").click()
        await expect(label).to_have_text("1/2")
        await expect(shown).to_have_attribute("data-turn", first)
        await page.get_by_role("button", name="Next version").click()
        await expect(shown).to_have_attribute("data-turn", second)

        await shown.get_by_role("button", name="Edit message").click()
        await page.get_by_label("Edit your message").fill("first question, better put")
        await page.get_by_role("button", name="Save and regenerate").click()
        await expect(label).to_have_text("3/3")
        await expect(questions).to_have_text(["first question, better put"])
        await expect(answers).to_have_text(["Answer 1."])
        await page.get_by_role("button", name="Previous version").click()
        await page.get_by_role("button", name="Previous version").click()
        await expect(label).to_have_text("1/3")
        await expect(questions).to_have_text(["first question"])
        await page.get_by_role("button", name="Next version").click()
        await page.get_by_role("button", name="Next version").click()
        await expect(label).to_have_text("3/3")

        await send(page, "second question")
        await expect(answers).to_have_text(["Answer 1.", "Answer 2."])
        await send(page, "third question")
        await expect(answers).to_have_text(["Answer 1.", "Answer 2.", "Answer 3."])
        original = await page.evaluate("sessionStorage.getItem('session')")
        await shown.nth(1).get_by_role("button", name="Edit message").click()
        await page.get_by_label("Edit your message").fill("second question, edited")
        await page.get_by_role("button", name="Save in a new branch").click()
        await expect(questions).to_have_text(["first question, better put", "second question, edited"])
        await expect(answers).to_have_text(["Answer 1.", "Answer 2."])
        fork = await page.evaluate("sessionStorage.getItem('session')")
        assert fork != original
        await screenshot(page, "web-versions.png", tmp_path)

        token = await page.evaluate("sessionStorage.getItem('token')")
        async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as client:
            kept = (await client.get(f"/sessions/{original}/messages")).json()["items"]
            forked = (await client.get(f"/sessions/{fork}")).json()
        assert [m["content"] for m in kept if m["role"] == "user"] == [
            "first question, better put",
            "second question",
            "third question",
        ]
        assert forked["forked_from"]["session_id"] == original
