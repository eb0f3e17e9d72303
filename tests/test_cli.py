"""`agent-runtime token`: a token for the service that shares the data folder, with no set-up."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from jose import jwt

from app.auth.secret import SECRET_FILE, load_or_create_secret
from app.auth.verify import TokenVerifier
from app.cli import main
from app.settings import AuthSettings, get_settings
from tests.conftest import TEST_SECRET, make_settings, running_app


@pytest.fixture
def data_dir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data folder in DATA_DIR and no AUTH_* settings, read through a cleared settings cache."""
    data = tmp_path / "data"
    monkeypatch.setenv("DATA_DIR", str(data))
    for name in list(os.environ):
        if name.startswith("AUTH_"):
            monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield data
    get_settings.cache_clear()


@pytest.fixture
def served_data_dir(data_dir_env: Path) -> Path:
    """The data folder as a service that ran on it left it: with its generated secret."""
    load_or_create_secret(data_dir_env)
    return data_dir_env


def run_token(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["token", *args]) == 0
    out = capsys.readouterr().out.strip()
    assert out.count(".") == 2
    return out


def test_token_refuses_to_invent_a_secret_the_service_does_not_use(
    data_dir_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run outside the service's folder (no DATA_DIR, no ./data of the service): a one-line refusal
    that names the folder it looked in, and nothing written there."""
    assert main(["token", "--tenant", "acme", "--sub", "ops"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert f"no service secret at {data_dir_env.resolve() / SECRET_FILE}" in captured.err
    assert "DATA_DIR" in captured.err
    assert not data_dir_env.exists()


def test_token_finds_the_data_folder_in_the_working_folder_as_serve_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DATA_DIR", raising=False)
    for name in list(os.environ):
        if name.startswith("AUTH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    try:
        secret = load_or_create_secret(get_settings().data_dir)  # what `serve` generates in ./data
        token = run_token(capsys, "--tenant", "acme", "--sub", "ops")
    finally:
        get_settings.cache_clear()
    assert (tmp_path / "data" / SECRET_FILE).exists()
    assert jwt.decode(token, secret, algorithms=["HS256"])["tenant_id"] == "acme"


async def test_token_is_accepted_by_a_service_on_the_same_data_dir(
    served_data_dir: Path, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    token = run_token(capsys, "--tenant", "acme", "--sub", "ops")
    secret_file = served_data_dir / SECRET_FILE
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600

    settings = make_settings(database_url, served_data_dir, auth=AuthSettings(jwt_secret=None))
    async with running_app(settings) as (_, client):
        response = await client.get("/agents", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200, response.text
        forged = await client.get("/agents", headers={"Authorization": f"Bearer {_resign(token)}"})
        assert forged.status_code == 401


async def test_service_started_first_generates_the_secret_the_cli_uses(
    data_dir_env: Path, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(database_url, data_dir_env, auth=AuthSettings(jwt_secret=None))
    async with running_app(settings) as (_, client):
        secret_file = data_dir_env / SECRET_FILE
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        before = secret_file.read_text()
        token = run_token(capsys, "--tenant", "acme", "--sub", "ops")
        assert secret_file.read_text() == before
        response = await client.get("/agents", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200, response.text


async def test_role_admin_gives_the_admin_role(served_data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admin = run_token(capsys, "--tenant", "acme", "--sub", "root", "--role", "admin")
    plain = run_token(capsys, "--tenant", "acme", "--sub", "ops")
    verifier = TokenVerifier(secret=(served_data_dir / SECRET_FILE).read_text().strip())
    principal = await verifier.verify(admin)
    assert (principal.tenant_id, principal.sub, principal.is_admin) == ("acme", "root", True)
    assert not (await verifier.verify(plain)).is_admin


def test_ttl_sets_the_expiry(served_data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claims = jwt.get_unverified_claims(run_token(capsys, "--tenant", "acme", "--sub", "ops", "--ttl", "120"))
    assert claims["exp"] - claims["iat"] == 120
    default = jwt.get_unverified_claims(run_token(capsys, "--tenant", "acme", "--sub", "ops"))
    assert default["exp"] - default["iat"] == 3600


@pytest.mark.parametrize("ttl", ["0", "-5", "soon"])
def test_ttl_must_be_positive(data_dir_env: Path, ttl: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["token", "--tenant", "acme", "--sub", "ops", "--ttl", ttl])
    assert exited.value.code == 2
    assert not (data_dir_env / SECRET_FILE).exists()


async def test_configured_secret_is_used_and_nothing_is_written(
    data_dir_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AUTH_JWT_SECRET", TEST_SECRET)
    get_settings.cache_clear()
    token = run_token(capsys, "--tenant", "acme", "--sub", "ops")
    assert (await TokenVerifier(secret=TEST_SECRET).verify(token)).sub == "ops"
    assert not (data_dir_env / SECRET_FILE).exists()


def test_jwks_mode_refuses_to_mint(
    data_dir_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AUTH_JWKS_URL", "https://idp.example.test/jwks.json")
    get_settings.cache_clear()
    assert main(["token", "--tenant", "acme", "--sub", "ops"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "AUTH_JWKS_URL" in captured.err


def test_tenant_and_sub_are_required(data_dir_env: Path) -> None:
    with pytest.raises(SystemExit):
        main(["token", "--sub", "ops"])


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("agent-runtime ")
    assert out.split()[1][0].isdigit()


def _resign(token: str) -> str:
    claims = jwt.get_unverified_claims(token)
    return str(jwt.encode(claims, "not-the-generated-secret-0123456789abcdef", algorithm="HS256"))


def test_rotate_secrets_key_on_a_never_migrated_database_says_so_in_one_line(
    data_dir_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("SECRETS_KEY_FILE", raising=False)
    data_dir_env.mkdir()

    assert main(["rotate-secrets-key"]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == ["agent-runtime: the database has no schema yet: run `agent-runtime migrate`"]
    assert not list(data_dir_env.glob("*key*")), "no key is generated for a rotation that did not run"
