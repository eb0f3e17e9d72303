"""The MCP door has no path around the `output` rules: its progress deltas and its result are the guarded text."""

from __future__ import annotations

import httpx

from tests.factories import create_agent, scripted_config
from tests.interop.test_mcp_server import mcp_client

CARD = "4111 1111 1111 1111"
REDACT_CARDS = {"id": "cards", "point": "output", "detect": "credit_card", "verdict": "redact"}


async def test_an_mcp_call_returns_and_streams_only_the_guarded_text(
    base_url: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    config = scripted_config({"text": f"Card {CARD} is on file."}, policies=[REDACT_CARDS])
    await create_agent(api, user, config, name="Guarded helper")
    deltas: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        deltas.append(message or "")

    async with mcp_client(f"{base_url}/mcp", user) as client:
        result = await client.call_tool("Guarded_helper", {"input": "card?"}, progress_callback=progress)
    guarded = "Card [REDACTED:credit_card] is on file."
    assert result.content[0].text == guarded
    assert "".join(deltas) == guarded
    assert "4111 1111" not in str(result.structured_content)
