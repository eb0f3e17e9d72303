"""The chat page in a real headless Chromium (Debian's `chromium`, driven by Playwright).

1. One-click local sign-in, an agent and a session created in the page, a turn that needs an
   approval, approved in the page, the final answer shown.
2. Signed in with a pasted token on a phone-sized screen, the page is reloaded mid-turn and the
   stream resumes from the last event it showed (through a stream token): every word once.
3. A turn's stream cut by a hand-over (tests/handover.py): the page follows it again and withdraws
   what the lost run showed (the drop rule at `turn.resumed`).
Each test takes a screenshot; `make screenshots` (UPDATE_SCREENSHOTS=1) writes them to docs/img/,
shown in the README, so an ordinary run leaves the work tree clean.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app.auth.secret import load_or_create_secret
from app.auth.verify import mint_user_token
from app.main import create_app
from app.settings import Settings
from tests.handover import TOOL_THEN_ANSWER, HandOver, HandOverApp
from tests.turns.loopback import serve_asgi, serve_on_loopback
from tests.web.conftest import (
    STEP_TIMEOUT_MS,
    axe_violations,
    create_agent_and_session,
    screenshot,
    sign_in_locally,
)

WORDS = [f"w{i}" for i in range(80)]


async def test_sign_in_run_a_turn_and_approve_it_in_the_page(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await browser.new_page(viewport={"width": 1200, "height": 860})
        page.set_default_timeout(STEP_TIMEOUT_MS)
        await page.goto(base_url)
        assert await axe_violations(page) == []  # the sign-in card
        await sign_in_locally(page)

        await create_agent_and_session(page, "calculator-demo")  # the page's demo config: calculator gated
        await page.get_by_label("Message", exact=True).fill("what is 6 times 7?")
        await page.get_by_label("Message", exact=True).press("Enter")

        card = page.locator("[data-approval]")
        await expect(card).to_contain_text("Approval needed: calculator · arithmetic needs a human")
        await expect(page.locator("[data-status]")).to_have_text("turn waiting for approval")
        await expect(page.locator(".tool").first).to_contain_text("result: hello")
        assert await axe_violations(page) == []  # a turn waiting for approval: tools, decisions, the card
        await card.get_by_role("button", name="Approve").click()

        await expect(page.locator('[data-status="completed"]')).to_have_text("turn completed")
        transcript = page.locator("#transcript")
        await expect(transcript).to_contain_text("result: 42")
        await expect(transcript).to_contain_text("resumed after the decision")
        await expect(transcript.locator(".msg-assistant").last).to_have_text("The answer is 42.")
        await expect(card.get_by_role("button", name="Approve")).to_be_disabled()
        assert await axe_violations(page) == []
        await screenshot(page, "web-approval.png", tmp_path)


async def test_a_reload_mid_turn_resumes_the_stream_without_loss_or_duplicates(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        secret = load_or_create_secret(page_settings.data_dir)
        token = mint_user_token(secret, tenant_id="phone", sub="pat", roles=[], ttl_seconds=600)
        page = await browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        page.set_default_timeout(STEP_TIMEOUT_MS)
        followed: list[str] = []
        page.on("request", lambda request: followed.append(request.url) if "/events?" in request.url else None)
        await page.goto(base_url)
        await page.get_by_label("Or paste a bearer token").fill(token)
        await page.get_by_role("button", name="Sign in with this token").click()
        await expect(page.locator("#who")).to_have_text("pat @ phone")

        config = {
            "model": {"provider": "scripted", "chunk_delay_ms": 50, "script": [{"text": " ".join(WORDS)}]},
            "tools": [],
        }
        await create_agent_and_session(page, "slow-talker", config)
        await page.get_by_label("Message", exact=True).fill("talk to me")
        await page.get_by_role("button", name="Send").click()
        bubble = page.locator(".msg-assistant")
        await expect(bubble).to_contain_text("w15")
        assert "w79" not in (await bubble.inner_text())

        await page.reload()
        await expect(page.locator('[data-status="completed"]')).to_have_text("turn completed")
        assert (await bubble.inner_text()).split() == WORDS
        await expect(page.locator(".msg-user")).to_have_count(1)
        await expect(page.locator("[data-status]")).to_have_count(1)
        resumed = [url for url in followed if "access_token=" in url]
        assert resumed, followed
        assert "after=0" not in resumed[0]
        await screenshot(page, "web-reload-phone.png", tmp_path)


@pytest.mark.parametrize("died", [False, True], ids=["drained", "died"])
async def test_a_stream_cut_by_a_hand_over_is_followed_again_and_the_lost_part_withdrawn(
    page_settings: Settings, sql: AsyncEngine, browser: Browser, tmp_path: Path, died: bool
) -> None:
    """The reply the lost run was streaming and the tool card it drew are taken back; the page ends
    up showing what the service stored, once. A drained replica's stream ends with `retry:`, a dead
    one's connection drops."""
    reason = "replica_lost" if died else "shutdown"
    front = HandOverApp(create_app(page_settings), sql, HandOver(durable=2, lost=13, reason=reason, died=died))
    async with serve_asgi(front, lifespan="on") as base_url:
        page = await browser.new_page(viewport={"width": 1200, "height": 860})
        page.set_default_timeout(STEP_TIMEOUT_MS)
        followed: list[str] = []
        page.on("request", lambda request: followed.append(request.url) if "/events?" in request.url else None)
        await page.goto(base_url)
        await page.get_by_role("button", name="Sign in with a local token").click()
        await create_agent_and_session(page, "handed-over", TOOL_THEN_ANSWER)
        await page.get_by_label("Message", exact=True).fill("echo?")
        await page.get_by_label("Message", exact=True).press("Enter")

        await expect(page.locator('[data-status="completed"]')).to_have_text("turn completed")
        transcript = page.locator("#transcript")
        await expect(transcript.locator(".status").first).to_have_text(f"continued on another replica ({reason})")
        session_id = await page.evaluate("sessionStorage.getItem('session')")
        token = await page.evaluate("sessionStorage.getItem('token')")
        async with httpx.AsyncClient(base_url=base_url) as client:
            stored = (await client.get(f"/sessions/{session_id}/messages",
                                       headers={"Authorization": f"Bearer {token}"})).json()["items"]  # fmt: skip
        replies = [m["content"] for m in stored if m["role"] == "assistant" and m["content"]]
        results = [m["content"] for m in stored if m["role"] == "tool"]
        assert replies == ["Let me ask the echo tool.", "The echo said hello."]
        assert await transcript.locator(".msg-assistant").all_inner_texts() == replies
        assert (
            [t.removeprefix("result: ") for t in await transcript.locator(".tool .result").all_inner_texts()]
            == results
            == ["hello"]
        )
        assert "ASK THE" not in await transcript.inner_text()
        assert front.result is not None
        shown = front.result.shown
        lost_text = "".join(e["text"] for e in shown if e["type"] == "message.delta")
        assert "ASK THE" in lost_text  # the page had been sent the lost run's text
        if not died:  # (a dropped connection may lose the frames in flight: then it follows from the start)
            assert f"after={shown[-1]['seq']}" in followed[0]  # followed from the last event it had drawn
        await page.screenshot(path=str(tmp_path / "web-hand-over.png"), full_page=True)  # not in the README
