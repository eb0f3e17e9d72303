"""Settings read from the environment, grouped, with comma-separated lists."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

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


def _env_names(model: type[BaseSettings], prefix: str = "") -> list[str]:
    names = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseSettings):
            names += _env_names(annotation, str(annotation.model_config.get("env_prefix", "")))
        else:
            names.append(f"{prefix}{name}".upper())
    return names


def test_the_readme_configuration_table_names_every_setting() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    table = readme[readme.index("| variable | default | meaning |") :]
    missing = [name for name in _env_names(Settings) if f"`{name}`" not in table]
    assert missing == []
