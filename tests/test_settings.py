"""Settings read from the environment, grouped, with comma-separated lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from app.cli import main
from app.settings import Settings, get_settings


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


def test_enumerated_settings_are_read_case_insensitively(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOG_LEVEL", "WARNING")
    monkeypatch.setenv("LOG_FORMAT", "Console")
    settings = Settings()
    assert settings.observability.log_level == "warning"
    assert settings.observability.log_format == "console"


@pytest.fixture
def fresh_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_migrate_runs_with_an_upper_case_log_level(
    fresh_settings: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "WARNING")
    assert main(["migrate"]) == 0
    assert capsys.readouterr().out.strip() == "database is at head"


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("LOG_LEVEL", "LOUD", "invalid setting LOG_LEVEL: expected one of debug, info, warning, error"),
        ("LOG_FORMAT", "xml", "invalid setting LOG_FORMAT: expected one of json, console"),
        ("DATABASE_POOL_SIZE", "0", "invalid setting DATABASE_POOL_SIZE: input should be greater than or equal to 1"),
        ("WEB_LOCAL_SIGN_IN", "sometimes", "invalid setting WEB_LOCAL_SIGN_IN: input should be a valid boolean"),
    ],
)
@pytest.mark.parametrize("command", [["migrate"], ["serve", "--port", "1"], ["token", "--tenant", "t", "--sub", "s"]])
def test_an_invalid_setting_stops_the_command_with_one_line(
    fresh_settings: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    line: str,
    command: list[str],
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert captured.err.startswith(f"agent-runtime: {line}")
    assert value not in captured.err.replace(variable, "")
