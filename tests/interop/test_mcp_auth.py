"""With an issuer configured, MCP clients find where to sign in: the protected resource metadata names
it, and a 401 of the doors points at that metadata (RFC 9728)."""

from __future__ import annotations

from pathlib import Path

from app.auth.verify import mint_user_token
from app.settings import AuthSettings
from tests.conftest import TEST_SECRET, make_settings, running_app

ISSUER = "https://id.example.test"


async def test_the_resource_metadata_names_the_issuer_and_a_401_points_at_it(database_url: str, tmp_path: Path) -> None:
    settings = make_settings(database_url, tmp_path, auth=AuthSettings(jwt_secret=TEST_SECRET, issuer=ISSUER))
    async with running_app(settings) as (_, client):
        metadata = await client.get("/.well-known/oauth-protected-resource")
        refused = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        a2a = await client.get("/a2a")
        token = mint_user_token(TEST_SECRET, tenant_id="t-meta", sub="alice", roles=[], ttl_seconds=60, issuer=ISSUER)
        listed = await client.get("/a2a", headers={"Authorization": f"Bearer {token}"})
    assert metadata.status_code == 200
    assert metadata.json()["authorization_servers"] == [ISSUER]
    assert metadata.json()["resource"] == "http://testserver/mcp"
    assert refused.status_code == 401
    challenge = 'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource"'
    assert refused.headers["www-authenticate"] == challenge
    assert a2a.status_code == 401
    assert listed.status_code == 200
