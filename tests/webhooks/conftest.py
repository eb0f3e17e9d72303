from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import WebhookSettings
from tests.conftest import make_settings, running_app

EXAMPLE_HOST = "hooks.example.com"


@pytest.fixture(scope="module")
async def hooks_client(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[httpx.AsyncClient]:
    """The service with the example host allowed: this machine resolves no public name."""
    settings = make_settings(
        database_url, tmp_path_factory.mktemp("hooks"), webhooks=WebhookSettings(allowed_hosts=[EXAMPLE_HOST])
    )
    async with running_app(settings) as (_, client):
        yield client
