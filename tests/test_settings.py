"""Settings read from the environment, grouped, with comma-separated lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings


def test_comma_separated_lists_are_split_and_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORS_ORIGINS", "https://a.example, https://b.example,")
    monkeypatch.setenv("SIGNING_EXTRA_PUBLIC_KEY_FILES", "/keys/old.pem,/keys/next.pem")
    settings = Settings()
    assert settings.http.cors_origins == ["https://a.example", "https://b.example"]
    assert settings.signing.extra_public_key_files == [Path("/keys/old.pem"), Path("/keys/next.pem")]


def test_grouped_settings_read_their_prefixed_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql+asyncpg://db/x")
    monkeypatch.setenv("AUTH_AUDIENCE", "agent-runtime")
    monkeypatch.setenv("MCP_GATEWAY_URL", "http://gw")
    settings = Settings()
    assert settings.database_url == "postgresql+asyncpg://db/x"
    assert settings.auth.audience == "agent-runtime"
    assert settings.mcp_gateway.url == "http://gw"


def test_without_a_database_url_the_embedded_sqlite_file_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("DATA_DIR", "/srv/data")
    assert Settings().database_url == "sqlite+aiosqlite:////srv/data/agent-runtime.db"
