"""Fixtures and steps the page's browser tests share: Debian's Chromium driven by Playwright."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from app.settings import AuthSettings, Settings
from tests.conftest import make_settings

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "img"
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"
STEP_TIMEOUT_MS = 20_000
expect.set_options(timeout=STEP_TIMEOUT_MS)  # a deadline for a loaded machine, never a wait
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="`make test` installs Debian's chromium first")
    for item in items:
        if not CHROMIUM.exists() and "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


@pytest.fixture
def page_settings(database_url: str, tmp_path: Path) -> Settings:
    """No auth configured: the service generates its secret, so the local one-click sign-in is on."""
    return make_settings(database_url, tmp_path, auth=AuthSettings(jwt_secret=None, jwks_url=None))


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


async def open_page(browser: Browser, base_url: str, **options: object) -> Page:
    options.setdefault("viewport", {"width": 1200, "height": 860})
    context = await browser.new_context(**options)  # type: ignore[arg-type]
    page = await context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    await page.goto(base_url)
    return page


async def sign_in_locally(page: Page, tenant: str = "local", sub: str = "local") -> None:
    await page.get_by_label("Tenant", exact=True).fill(tenant)
    await page.get_by_label("User", exact=True).fill(sub)
    await page.get_by_role("button", name="Sign in with a local token").click()
    await expect(page.locator("#who")).to_have_text(f"{sub} @ {tenant}")


async def create_agent_and_session(page: Page, name: str, config: dict[str, object] | None = None) -> None:
    await expect(page.locator("#agent-select option").first).to_be_attached()  # the agents have loaded
    if await page.locator("#new-agent").get_attribute("open") is None:
        await page.get_by_text("New agent", exact=True).click()
    await page.get_by_label("Name", exact=True).fill(name)
    if config is not None:
        await page.get_by_label("Configuration (JSON)").fill(json.dumps(config))
    await page.get_by_role("button", name="Create agent").click()
    await expect(page.locator("#agent-select option:checked")).to_have_text(f"{name} (v1)")
    await page.get_by_role("button", name="New session").click()
    await expect(page.locator("#chat-title")).to_have_text("New conversation")
    await expect(page.get_by_label("Message", exact=True)).to_be_enabled()


async def send(page: Page, text: str) -> None:
    await page.get_by_label("Message", exact=True).fill(text)
    await page.get_by_label("Message", exact=True).press("Enter")


async def screenshot(page: Page, name: str, tmp_path: Path) -> None:
    path = (SCREENSHOTS if UPDATE_SCREENSHOTS else tmp_path) / name
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000  # a rendered page, not an empty frame


async def axe_violations(page: Page) -> list[dict[str, object]]:
    """axe-core's serious and critical violations of the page as it is now (injected over CDP, so the
    page's CSP, which allows no inline script, does not stand in the way)."""
    await page.evaluate(AXE.read_text())
    result = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["html"] for n in v["nodes"]][:3]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
