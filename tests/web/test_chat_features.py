"""What makes the page one a person would choose, each in a real headless Chromium:

- the model's markdown rendered as it streams, sanitised: nothing in a reply runs;
- Stop cancels the turn; auto-scroll pauses when the reader scrolls up, "Jump to latest" returns;
- sessions titled by their first message, renamed, filtered, closed; tokens and cost per turn; the
  policy's decisions folded into one line; sign-out and a user switch leave nothing behind;
- a phone: the transcript and the composer in view; dark mode; keyboard-only use; axe-core.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from playwright.async_api import Browser, Page, expect

from app.auth.secret import load_or_create_secret
from app.auth.verify import mint_user_token
from app.settings import ModelPrice, PricingSettings, Settings
from tests.turns.loopback import serve_on_loopback
from tests.web.conftest import (
    STEP_TIMEOUT_MS,
    axe_violations,
    create_agent_and_session,
    open_page,
    screenshot,
    send,
    sign_in_locally,
)

HOSTILE = (
    "# Findings\n\n"
    "- first point\n- second point\n\n"
    "| tool | verdict |\n|---|---|\n| echo | allow |\n\n"
    "```python\nprint('hello')\n```\n\n"
    "See [the site](https://example.org/docs) and [this](javascript:window.__pwned='link').\n\n"
    "<img src=x onerror=\"window.__pwned='img'\">\n\n"
    "<script>window.__pwned='script'</script>\n\n"
    "<a href=\"javascript:window.__pwned='anchor'\" onclick=\"window.__pwned='click'\">click me</a>\n\n"
    "<iframe src=\"javascript:window.__pwned='frame'\"></iframe> done."
)
TWO_TOOLS = [
    {"text": "Checking.", "tool_calls": [
        {"name": "echo", "arguments": {"text": "hi"}},
        {"name": "calculator", "arguments": {"expression": "2+2"}}]},
    {"text": "All **done**."},
]  # fmt: skip


def _scripted(steps: list[dict[str, object]], *, delay_ms: int = 0, name: str | None = None) -> dict[str, object]:
    model: dict[str, object] = {"provider": "scripted", "chunk_delay_ms": delay_ms, "script": steps}
    if name:
        model["name"] = name
    return {"model": model, "tools": ["builtin:echo", "builtin:calculator"]}


async def _api(base_url: str, page: Page) -> httpx.AsyncClient:
    token = await page.evaluate("sessionStorage.getItem('token')")
    return httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {token}"})


async def test_markdown_renders_while_streaming_and_nothing_in_a_reply_runs(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        await sign_in_locally(page)
        await create_agent_and_session(page, "markdown", _scripted([{"text": HOSTILE}], delay_ms=25))
        await send(page, "report")

        await expect(page.locator("#transcript")).to_have_attribute("aria-live", "polite")
        streaming = page.locator(".msg-assistant[aria-busy=true]")  # announced once it settles
        await expect(streaming.locator("li").first).to_have_text("first point")  # a list, mid-stream
        await expect(streaming.locator("h1")).to_have_text("Findings")
        await expect(page.locator('[data-status="completed"]')).to_be_visible()

        reply = page.locator(".msg-assistant").last
        await expect(reply).not_to_have_attribute("aria-busy", "true")
        await expect(reply.locator("table th")).to_have_text(["tool", "verdict"])
        await expect(reply.locator(".code .code-lang")).to_have_text("python")
        await expect(reply.locator(".code pre")).to_have_text("print('hello')")
        await reply.get_by_role("button", name="Copy python").click()
        await expect(reply.get_by_role("button", name="Copy python")).to_have_text("Copied")
        assert await page.evaluate("navigator.clipboard.readText()") == "print('hello')\n"
        link = reply.get_by_role("link", name="the site")
        await expect(link).to_have_attribute("href", "https://example.org/docs")
        await expect(link).to_have_attribute("rel", "noopener noreferrer")
        await expect(link).to_have_attribute("target", "_blank")

        html = await reply.inner_html()
        assert "javascript:" not in html
        assert "onerror" not in html
        assert "onclick" not in html
        assert await reply.locator("script, iframe, img[src]").count() == 0
        await reply.get_by_text("click me").click()
        await reply.get_by_text("this", exact=True).click()
        assert await page.evaluate("window.__pwned") is None
        assert dialogs == []
        assert len(page.context.pages) == 1  # no javascript: link opened a window
        await screenshot(page, "web-markdown.png", tmp_path)


async def test_stop_cancels_the_turn_and_auto_scroll_pauses_while_the_reader_scrolls_up(
    page_settings: Settings, browser: Browser
) -> None:
    lines = "\n\n".join(f"Paragraph {i} of a long answer." for i in range(400))
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url, viewport={"width": 1000, "height": 600})
        await sign_in_locally(page)
        await create_agent_and_session(page, "long", _scripted([{"text": lines}], delay_ms=15))
        await send(page, "talk a lot")
        transcript = page.locator("#transcript")
        await expect(transcript).to_contain_text("Paragraph 12 ")
        at_end = "(t) => t.scrollHeight - t.scrollTop - t.clientHeight < 30"
        assert await transcript.evaluate(at_end)  # it follows the reply

        await transcript.hover()
        await page.mouse.wheel(0, -2000)  # the reader scrolls up
        jump = page.get_by_role("button", name="Jump to latest")
        await expect(jump).to_be_visible()
        held = await transcript.evaluate("(t) => t.scrollTop")
        await expect(transcript).to_contain_text("Paragraph 24 ")
        assert await transcript.evaluate("(t) => t.scrollTop") == held  # it stayed where the reader is
        await jump.click()
        await expect(jump).to_be_hidden()
        assert await transcript.evaluate(at_end)

        await page.get_by_role("button", name="Stop").click()
        await expect(page.locator('[data-status="cancelled"]')).to_have_text("turn cancelled")
        await expect(page.get_by_role("button", name="Send")).to_be_visible()
        assert "Paragraph 399" not in await transcript.inner_text()
        async with await _api(base_url, page) as client:
            session_id = await page.evaluate("sessionStorage.getItem('session')")
            turns = (await client.get(f"/sessions/{session_id}/turns")).json()["items"]
        assert [t["status"] for t in turns] == ["cancelled"]


async def test_sessions_usage_decisions_and_a_sign_out_that_leaves_nothing_behind(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    settings = page_settings.model_copy(
        update={"pricing": PricingSettings(model_prices={"house-model": ModelPrice(input=2.0, output=10.0)})}
    )
    async with serve_on_loopback(settings) as base_url:
        readme_token = mint_user_token(load_or_create_secret(settings.data_dir), tenant_id="acme", sub="ops",
                                       roles=[], ttl_seconds=600)  # fmt: skip
        async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {readme_token}"}) as c:
            config = _scripted(TWO_TOOLS, name="house-model")
            made = await c.post("/agents", json={"name": "from-curl", "config": config})
            assert made.status_code == 201, made.text

        page = await open_page(browser, base_url)
        await sign_in_locally(page, tenant="acme", sub="ops")
        await expect(page.locator("#agent-select option:checked")).to_have_text("from-curl (v1)")  # the curl's agent
        await page.get_by_role("button", name="New session").click()
        await send(page, "Plan a trip to Lisbon\nwith two stops")
        await expect(page.locator('[data-status="completed"]')).to_be_visible()

        folded = page.locator(".policy details")
        await expect(folded.locator("summary")).to_have_text(
            "1 prompt check allowed by policy · 2 calls allowed by policy"
        )
        await expect(folded.locator(".receipts li")).to_have_count(3)
        assert not await folded.locator(".receipts").is_visible()
        await folded.locator("summary").click()
        await expect(folded.locator(".receipts")).to_contain_text("tool: allow")
        usage = page.locator(".usage")
        await expect(usage).to_contain_text(" out tokens · $")
        await expect(page.locator(".msg-assistant strong")).to_have_text("done")

        sessions = page.locator("#sessions [data-session]")
        await expect(page.locator("#chat-title")).to_have_text("Plan a trip to Lisbon")
        await expect(sessions.first.locator(".title")).to_have_text("Plan a trip to Lisbon")
        await expect(sessions.first.locator(".when")).to_have_text("just now")
        await page.get_by_role("button", name="Rename").click()
        await page.get_by_label("Session title").fill("Lisbon, May")
        await page.get_by_label("Session title").press("Enter")
        await expect(page.locator("#chat-title")).to_have_text("Lisbon, May")
        session_id = await page.evaluate("sessionStorage.getItem('session')")
        async with await _api(base_url, page) as client:
            stored = (await client.get(f"/sessions/{session_id}")).json()
        assert stored["title"] == "Lisbon, May"

        await page.reload()  # the usage of a past turn comes from the turn, with its cost
        await expect(page.locator(".usage")).to_have_text(await usage.inner_text())
        await page.get_by_role("button", name="New session").click()
        await send(page, "Something else entirely")
        await expect(sessions).to_have_count(2)
        other = sessions.filter(has_text="Something else entirely")
        await expect(other.locator(".title")).to_have_text("Something else entirely")
        await page.get_by_label("Filter sessions").fill("lisbon")
        await expect(sessions).to_have_count(1)
        await expect(sessions.locator(".title")).to_have_text("Lisbon, May")
        await page.get_by_label("Filter sessions").clear()
        await expect(sessions).to_have_count(2)
        await page.get_by_role("button", name="Close session").click()
        await expect(page.get_by_label("Message", exact=True)).to_be_disabled()
        await expect(other.locator(".closed")).to_have_text(" · closed")
        await screenshot(page, "web-sessions.png", tmp_path)

        await page.get_by_role("button", name="Sign out").click()
        await expect(page.get_by_role("button", name="Sign in with a local token")).to_be_visible()
        await expect(page.locator("#workspace")).to_be_hidden()
        assert await page.evaluate("sessionStorage.length") == 0
        assert await page.locator("#transcript > *, #sessions > *, #agent-select > *").count() == 0
        assert "Lisbon" not in await page.locator("body").inner_text()

        await sign_in_locally(page, tenant="globex", sub="ann")  # another tenant: none of it is hers
        await expect(page.locator("#agent-select option")).to_have_text(["no agents yet: create one below"])
        await expect(page.locator("#sessions")).to_have_text("No sessions yet")
        await expect(page.locator("#chat-title")).to_have_text("No session open")
        await expect(page.locator("#transcript > *")).to_have_count(0)
        await expect(page.get_by_label("Message", exact=True)).to_be_disabled()


async def test_on_a_phone_in_dark_mode_the_transcript_and_composer_are_in_view(
    page_settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url, viewport={"width": 390, "height": 844}, is_mobile=True,
                               has_touch=True, color_scheme="dark")  # fmt: skip
        assert await page.locator("#workspace").is_hidden()  # no empty workspace under the sign-in card
        await sign_in_locally(page)
        menu = page.get_by_role("button", name="Sessions")
        await expect(menu).to_have_attribute("aria-expanded", "true")  # no session yet: the panel is open
        await create_agent_and_session(page, "phone", _scripted([{"text": "Short **answer**."}]))
        await expect(menu).to_have_attribute("aria-expanded", "false")
        await send(page, "hi")
        await expect(page.locator('[data-status="completed"]')).to_be_visible()
        for selector in ("#message", "#send", "#transcript", ".msg-assistant"):
            box = await page.locator(selector).bounding_box()
            assert box is not None, selector
            assert 0 <= box["y"] <= box["y"] + box["height"] <= 844, (selector, box)
        background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(20, 20, 19)", background  # the dark palette
        assert await axe_violations(page) == []  # contrast of the dark palette included
        await menu.click()
        await expect(page.locator("#sessions [data-session]")).to_have_count(1)
        await expect(page.locator("#transcript")).to_be_hidden()
        await page.locator("#sessions [data-session]").click()
        await expect(page.locator("#transcript")).to_contain_text("Short answer.")
        await screenshot(page, "web-phone-dark.png", tmp_path)


async def _tab_to(page: Page, name: str, limit: int = 40) -> None:
    """Press Tab until the focused element's accessible name is `name` (bounded)."""
    for _ in range(limit):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(
            "(() => { const e = document.activeElement;"
            " return e.getAttribute('aria-label') || (e.labels && e.labels[0]?.textContent) || e.textContent; })()"
        )
        if (focused or "").strip() == name:
            return
    raise AssertionError(f"Tab never reached {name!r}")


async def test_keyboard_only_from_sign_in_to_an_approved_answer(page_settings: Settings, browser: Browser) -> None:
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        await expect(page.get_by_role("button", name="Sign in with a local token")).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator("#who")).to_have_text("local @ local")
        await _tab_to(page, "New agent")
        await page.keyboard.press("Enter")
        await _tab_to(page, "Create agent")
        await page.keyboard.press("Enter")  # the demo configuration: the calculator needs an approval
        await expect(page.locator("#agent-select option:checked")).to_have_text("demo (v1)")
        await _tab_to(page, "New session")
        await page.keyboard.press("Enter")
        await expect(page.get_by_label("Message", exact=True)).to_be_focused()
        await page.keyboard.type("what is 6 times 7?")
        await page.keyboard.press("Enter")
        await expect(page.locator("[data-approval]")).to_be_visible()
        await _tab_to(page, "Reason (optional, kept with the decision)")
        await page.keyboard.type("checked by hand")
        await _tab_to(page, "Approve")
        await page.keyboard.press("Enter")
        await expect(page.locator('[data-status="completed"]')).to_be_visible()
        await expect(page.locator(".msg-assistant").last).to_have_text("The answer is 42.")
        await expect(page.locator(".policy summary").last).to_contain_text("1 call approved by local")


async def test_api_docs_work_offline(page_settings: Settings, browser: Browser) -> None:
    """Every request of /docs and /redoc goes to the service itself; any other is refused."""
    async with serve_on_loopback(page_settings) as base_url:
        page = await open_page(browser, base_url)
        elsewhere: list[str] = []

        async def only_here(route: object) -> None:
            request = route.request  # type: ignore[attr-defined]
            if request.url.startswith(base_url) or request.url.startswith("data:") or request.url.startswith("blob:"):
                await route.continue_()  # type: ignore[attr-defined]
            else:
                elsewhere.append(request.url)
                await route.abort()  # type: ignore[attr-defined]

        await page.context.route("**/*", only_here)
        await page.goto(f"{base_url}/docs")
        await expect(page.locator(".swagger-ui .info .title")).to_contain_text("agent-runtime", timeout=STEP_TIMEOUT_MS)
        await expect(page.locator("#operations-sessions-updateSession")).to_be_visible()
        await page.goto(f"{base_url}/redoc")
        await expect(page.get_by_role("heading", name="agent-runtime (0.1.0)")).to_be_visible(timeout=STEP_TIMEOUT_MS)
        await expect(page.get_by_text("Rename the session").first).to_be_attached()
        assert elsewhere == []
        await page.goto(base_url)
        await expect(page.get_by_role("link", name="API docs")).to_have_attribute("href", "/docs")
