"""Structured results, attachments and held results in the page: an agent with an `output_schema` shows
its parsed result folded under the answer; a file attached in the composer reaches the model as a part
of the turn; a tool result a rule holds for a human is shown in its approval card, and approving it puts
it into the prompt."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from playwright.async_api import Browser, expect

from app.settings import Settings
from tests.turns.loopback import serve_on_loopback
from tests.web.conftest import axe_violations, create_agent_and_session, open_page, send, sign_in_locally

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
STRUCTURED = {
    "model": {"provider": "scripted", "script": [{"text": '{"city": "Oslo"}'}]},
    "tools": [],
    "output_schema": SCHEMA,
}
PLAIN = {"model": {"provider": "scripted", "script": [{"text": "Read it."}]}, "tools": []}
HELD = {
    "model": {
        "provider": "scripted",
        "script": [{"tool_calls": [{"name": "echo", "arguments": {"text": "quarterly numbers"}}]}, {"text": "Noted."}],
    },
    "tools": ["builtin:echo"],
    "policies": [
        {
            "id": "read-first",
            "point": "tool_result",
            "tool": "echo",
            "result_regex": "numbers",
            "verdict": "requires_approval",
        }
    ],
}


async def test_a_held_result_is_shown_in_its_approval_card_and_approved_into_the_prompt(
    page_settings: Settings, browser: Browser
) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        await sign_in_locally(page)
        await create_agent_and_session(page, "held", HELD)
        await send(page, "echo the numbers")
        card = page.locator("[data-approval]")
        await expect(card).to_contain_text("Approval needed for a result: echo")
        await expect(card.locator("pre.held-result")).to_have_text("quarterly numbers")
        await expect(card.locator("textarea")).to_have_count(0)
        assert [v for v in await axe_violations(page) if v["impact"] in ("serious", "critical")] == []
        await card.get_by_role("button", name="Approve").click()
        await expect(page.locator('[data-status="completed"]')).to_have_text("turn completed")
        await expect(page.locator("#transcript .msg-assistant").last).to_have_text("Noted.")


async def test_a_structured_result_is_shown_folded_under_the_answer(page_settings: Settings, browser: Browser) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        await sign_in_locally(page)
        await create_agent_and_session(page, "structured", STRUCTURED)
        await send(page, "which city?")
        output = page.locator("details.output")
        await expect(output).to_have_count(1)
        await expect(output.locator("summary")).to_have_text("Structured output")
        await output.locator("summary").click()
        assert json.loads(await output.locator("pre").inner_text()) == {"city": "Oslo"}
        assert [v for v in await axe_violations(page) if v["impact"] in ("serious", "critical")] == []


async def test_an_attached_file_is_uploaded_and_sent_with_the_message(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("the launch is on Tuesday")
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        await sign_in_locally(page)
        await create_agent_and_session(page, "reader", PLAIN)
        await page.locator("#attach").set_input_files(str(notes))
        await expect(page.locator("#attached")).to_have_text("Attached: notes.txt")
        await send(page, "read this")
        await expect(page.locator("#transcript .msg-user").last).to_contain_text("read this 📎 notes.txt")
        await expect(page.locator("#attached")).to_have_text("")
        token = await page.evaluate("() => sessionStorage.getItem('token')")
        headers = {"Authorization": f"Bearer {token}"}
        session_id = await page.evaluate("() => sessionStorage.getItem('session')")
        async with httpx.AsyncClient(base_url=base_url, headers=headers) as client:
            listed = await client.get(f"/sessions/{session_id}/messages")
            assert listed.status_code == 200, listed.text
            messages = listed.json()["items"]
        user = next(m for m in messages if m["role"] == "user")
        assert [a["name"] for a in user["attachments"]] == ["notes.txt"]
