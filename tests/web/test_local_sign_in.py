"""The one-click local token: only from loopback, at a loopback host, with no proxy header and no
foreign origin, and only while the service runs on the secret it generated itself."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.auth.secret import load_or_create_secret
from app.auth.verify import TokenVerifier
from app.settings import AuthSettings, HttpSettings, ModelPrice, PricingSettings, Settings
from app.web.local_sign_in import refusal
from tests.conftest import make_settings, running_app
from tests.turns.loopback import serve_on_loopback

LOOPBACK = {"host": "127.0.0.1:8000"}


def _generated(database_url: str, folder: Path, **http: object) -> Settings:
    return make_settings(
        database_url, folder, auth=AuthSettings(jwt_secret=None, jwks_url=None), http=HttpSettings(**http)
    )


def test_the_rules(database_url: str, tmp_path: Path) -> None:
    settings = _generated(database_url, tmp_path)
    assert refusal(settings, peer="127.0.0.1", headers=LOOPBACK) is None
    assert refusal(settings, peer="::1", headers={"host": "[::1]:8000"}) is None
    same_origin = {"host": "localhost:8000", "origin": "http://localhost:8000"}
    assert refusal(settings, peer="127.0.0.1", headers=same_origin) is None
    for peer, headers in [
        ("10.0.0.7", LOOPBACK),
        ("192.168.1.2", LOOPBACK),
        (None, LOOPBACK),
        ("127.0.0.1", {**LOOPBACK, "x-forwarded-for": "203.0.113.9"}),
        ("127.0.0.1", {**LOOPBACK, "forwarded": "for=203.0.113.9"}),
        ("127.0.0.1", {**LOOPBACK, "x-real-ip": "203.0.113.9"}),
        ("127.0.0.1", {"host": "rebound.example:8000"}),
        ("127.0.0.1", {**LOOPBACK, "origin": "https://evil.example"}),
    ]:
        assert refusal(settings, peer=peer, headers=headers) is not None, (peer, headers)


@pytest.mark.parametrize(
    "headers",
    [
        {**LOOPBACK, "CF-Connecting-IP": "203.0.113.9"},
        {**LOOPBACK, "True-Client-IP": "203.0.113.9"},
        {**LOOPBACK, "X-Forwarded-Proto": "https"},
        {**LOOPBACK, "X-Forwarded-Port": "443"},
        {**LOOPBACK, "X-Client-IP": "203.0.113.9"},
        {**LOOPBACK, "Via": "1.1 proxy"},
        {"host": "evil.example@127.0.0.1:8000"},
        {"host": "127.0.0.1:8000#frag"},
        {"host": "127.0.0.1:8000/path"},
        {"host": "127.0.0.1.evil.example"},
        {"host": "localhost:8000 "},
        {**LOOPBACK, "origin": "http://127.0.0.1:9999"},
        {**LOOPBACK, "origin": "http://localhost"},
        {**LOOPBACK, "origin": "https://127.0.0.1:8000"},
        {**LOOPBACK, "origin": "http://user@127.0.0.1:8000"},
        {**LOOPBACK, "origin": "null"},
    ],
)
def test_proxy_headers_odd_hosts_and_other_ports_are_refused(
    database_url: str, tmp_path: Path, headers: dict[str, str]
) -> None:
    settings = _generated(database_url, tmp_path)
    assert (
        refusal(settings, peer="127.0.0.1", headers={**LOOPBACK, "origin": "http://127.0.0.1:8000"}, port=8000) is None
    )
    assert refusal(settings, peer="127.0.0.1", headers=headers, port=8000) is not None


async def test_an_origin_at_another_local_port_is_refused_by_the_running_service(
    database_url: str, tmp_path: Path
) -> None:
    async with (
        serve_on_loopback(_generated(database_url, tmp_path)) as base_url,
        httpx.AsyncClient(base_url=base_url) as client,
    ):
        port = int(base_url.rsplit(":", 1)[1])
        own = await client.post("/web/local-token", headers={"Origin": f"http://127.0.0.1:{port}"})
        other = await client.post("/web/local-token", headers={"Origin": f"http://127.0.0.1:{port + 1}"})
        assert (own.status_code, other.status_code) == (200, 403)


@pytest.mark.parametrize(
    "auth",
    [
        AuthSettings(jwt_secret="x" * 40),
        AuthSettings(jwt_secret=None, jwks_url="https://idp.example/jwks", issuer="i", audience="a"),
    ],
)
def test_off_when_the_operator_configured_auth(database_url: str, tmp_path: Path, auth: AuthSettings) -> None:
    settings = make_settings(database_url, tmp_path, auth=auth)
    assert "configured with its own authentication" in str(refusal(settings, peer="127.0.0.1", headers=LOOPBACK))


def test_off_when_switched_off(database_url: str, tmp_path: Path) -> None:
    settings = _generated(database_url, tmp_path, web_local_sign_in=False)
    assert "WEB_LOCAL_SIGN_IN" in str(refusal(settings, peer="127.0.0.1", headers=LOOPBACK))


async def test_a_local_request_gets_a_token_the_api_accepts(database_url: str, tmp_path: Path) -> None:
    settings = _generated(database_url, tmp_path)
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        assert (await client.get("/web/sign-in")).json() == {"local": True, "reason": None}
        response = await client.post("/web/local-token")
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        token = response.json()["token"]
        agents = await client.get("/agents", headers={"Authorization": f"Bearer {token}"})
        assert agents.status_code == 200
        proxied = await client.post("/web/local-token", headers={"X-Forwarded-For": "203.0.113.9"})
        assert proxied.status_code == 403
        assert proxied.headers["content-type"] == "application/problem+json"
    principal = await TokenVerifier(secret=load_or_create_secret(tmp_path)).verify(token)
    assert (principal.tenant_id, principal.sub, principal.is_admin) == ("local", "local", True)


async def test_a_local_token_for_the_tenant_and_user_asked(database_url: str, tmp_path: Path) -> None:
    settings = _generated(database_url, tmp_path)
    async with serve_on_loopback(settings) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        response = await client.post("/web/local-token", json={"tenant_id": "acme", "sub": "alice"})
        assert response.status_code == 200, response.text
        assert (response.json()["tenant_id"], response.json()["sub"]) == ("acme", "alice")
        for bad in ({"tenant_id": ""}, {"sub": "a b"}, {"tenant_id": "x" * 129}, {"role": "admin"}):
            refused = await client.post("/web/local-token", json=bad)
            assert refused.status_code == 422, bad
            assert refused.headers["content-type"] == "application/problem+json"
    principal = await TokenVerifier(secret=load_or_create_secret(tmp_path)).verify(response.json()["token"])
    assert (principal.tenant_id, principal.sub, principal.is_admin) == ("acme", "alice", True)


async def test_the_price_table_is_the_built_in_one_under_model_prices(database_url: str, tmp_path: Path) -> None:
    settings = _generated(database_url, tmp_path).model_copy(
        update={"pricing": PricingSettings(model_prices={"gpt-4o": ModelPrice(input=1, output=2)})}
    )
    async with running_app(settings) as (_, client):
        prices = (await client.get("/web/prices")).json()
    assert (prices["currency"], prices["per_tokens"]) == ("USD", 1_000_000)
    assert prices["models"]["gpt-4o"] == {"input": 1.0, "output": 2.0}  # overridden
    assert prices["models"]["claude-sonnet-4-5"] == {"input": 3.0, "output": 15.0}  # built in


async def test_a_request_that_is_not_from_loopback_is_refused(database_url: str, tmp_path: Path) -> None:
    """httpx's ASGI transport presents the client as 127.0.0.1 with host `testserver`: the host rule refuses it."""
    async with running_app(_generated(database_url, tmp_path)) as (_, client):
        response = await client.post("/web/local-token")
        assert response.status_code == 403
        assert "127.0.0.1 or http://localhost" in response.json()["detail"]
        assert (await client.get("/web/sign-in")).json()["local"] is False


async def test_the_page_and_its_files_are_served(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="/web/static/app.js"' in page.text
    assets = ["/web/static/app.js", "/web/static/markdown.js", "/web/static/vendor/marked/marked.umd.js",
              "/web/static/vendor/dompurify/purify.min.js", "/web/static/style.css"]  # fmt: skip
    for asset, media in [(a, "text/css" if a.endswith(".css") else "javascript") for a in assets]:
        response = await client.get(asset)
        assert response.status_code == 200, asset
        assert media in response.headers["content-type"]
    assert "http://" not in page.text.replace("http://127.0.0.1", "")  # nothing fetched from elsewhere
