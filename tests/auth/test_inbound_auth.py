"""Inbound bearer tokens: what the API accepts, and every way a token must be refused.

HS256 cases go through the HTTP API (GET /agents); JWKS cases drive `TokenVerifier` against a
respx-mocked key server, plus one end-to-end app configured for a JWKS.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jose import jwk, jwt

from app.auth.verify import JwksCache, TokenVerifier
from app.errors import Unauthorized
from app.settings import AuthSettings
from tests.conftest import TEST_SECRET, make_settings, running_app

JWKS_URL = "https://idp.example.test/.well-known/jwks.json"
ISSUER = "https://idp.example.test/"
AUDIENCE = "agent-runtime"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64json(obj: dict[str, Any]) -> str:
    return _b64(json.dumps(obj, separators=(",", ":")).encode())


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    values: dict[str, Any] = {
        "sub": "alice",
        "tenant_id": "tenant-auth",
        "roles": [],
        "iat": now,
        "exp": now + 300,
    }
    values.update(overrides)
    return {k: v for k, v in values.items() if v is not None}


def hs_token(payload: dict[str, Any], secret: str = TEST_SECRET) -> str:
    return str(jwt.encode(payload, secret, algorithm="HS256"))


def hmac_token(header: dict[str, Any], payload: dict[str, Any], secret: bytes) -> str:
    """Hand-signed HS256: python-jose refuses a PEM as an HMAC secret, an attacker does not."""
    signing_input = f"{_b64json(header)}.{_b64json(payload)}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def assert_rejected(response: httpx.Response, token: str | None = None) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"].startswith("Bearer")
    body = response.json()
    assert body["status"] == 401
    assert body["title"] == "Unauthorized"
    assert body["type"].endswith("/unauthorized")
    assert body["detail"]
    if token:
        assert token not in response.text
        for part in token.split("."):
            if len(part) > 8:
                assert part not in response.text


async def get_agents(client: httpx.AsyncClient, token: str) -> httpx.Response:
    return await client.get("/agents", headers={"Authorization": f"Bearer {token}"})


# --- HS256 (the default mode) through the HTTP API -------------------------------------------------


async def test_valid_token_is_accepted(client: httpx.AsyncClient) -> None:
    response = await get_agents(client, hs_token(claims()))
    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}


async def test_missing_token_is_401(client: httpx.AsyncClient) -> None:
    assert_rejected(await client.get("/agents"))


async def test_non_bearer_scheme_is_401(client: httpx.AsyncClient) -> None:
    token = hs_token(claims())
    response = await client.get("/agents", headers={"Authorization": f"Basic {token}"})
    assert_rejected(response, token)


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30", "Bearer"])
async def test_garbage_token_is_401(client: httpx.AsyncClient, token: str) -> None:
    assert_rejected(await get_agents(client, token), token)


async def test_expired_token_beyond_leeway_is_401(client: httpx.AsyncClient) -> None:
    now = int(time.time())
    token = hs_token(claims(iat=now - 600, exp=now - 120))
    response = await get_agents(client, token)
    assert_rejected(response, token)
    assert response.json()["detail"] == "Token has expired"


async def test_token_expired_within_leeway_is_accepted(client: httpx.AsyncClient) -> None:
    now = int(time.time())
    response = await get_agents(client, hs_token(claims(iat=now - 600, exp=now - 5)))
    assert response.status_code == 200


async def test_token_without_exp_is_401(client: httpx.AsyncClient) -> None:
    token = hs_token(claims(exp=None))
    assert_rejected(await get_agents(client, token), token)


async def test_token_without_iat_is_401(client: httpx.AsyncClient) -> None:
    token = hs_token(claims(iat=None))
    assert_rejected(await get_agents(client, token), token)


async def test_token_issued_in_the_future_is_401(client: httpx.AsyncClient) -> None:
    now = int(time.time())
    token = hs_token(claims(iat=now + 3600, exp=now + 7200))
    assert_rejected(await get_agents(client, token), token)


async def test_wrong_signature_is_401(client: httpx.AsyncClient) -> None:
    token = hs_token(claims(), secret="another-secret-of-sufficient-length-987654")
    response = await get_agents(client, token)
    assert_rejected(response, token)
    assert response.json()["detail"] == "Token signature is invalid"


async def test_tampered_payload_is_401(client: httpx.AsyncClient) -> None:
    header, _, signature = hs_token(claims()).split(".")
    forged = f"{header}.{_b64json(claims(roles=['admin']))}.{signature}"
    assert_rejected(await get_agents(client, forged), forged)


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
async def test_alg_none_is_401(client: httpx.AsyncClient, alg: str) -> None:
    token = f"{_b64json({'alg': alg, 'typ': 'JWT'})}.{_b64json(claims(roles=['admin']))}."
    response = await get_agents(client, token)
    assert_rejected(response, token)
    assert response.json()["detail"] == "Token algorithm is not accepted"


async def test_hs512_token_with_the_right_secret_is_401(client: httpx.AsyncClient) -> None:
    token = str(jwt.encode(claims(), TEST_SECRET, algorithm="HS512"))
    assert_rejected(await get_agents(client, token), token)


@pytest.mark.parametrize(
    "aud", ["mcp-gateway", "context-engine", ["something-else", "mcp-gateway"]], ids=["gateway", "ce", "list"]
)
async def test_token_minted_for_an_upstream_is_401(client: httpx.AsyncClient, aud: Any) -> None:
    token = hs_token(claims(aud=aud))
    response = await get_agents(client, token)
    assert_rejected(response, token)
    assert response.json()["detail"] == "Agent tokens are not accepted by this API"


async def test_agent_subject_is_401(client: httpx.AsyncClient) -> None:
    token = hs_token(claims(sub="agent:5b0c3c1e-2d4a-4f53-9a53-5b8c1e5f7a10"))
    assert_rejected(await get_agents(client, token), token)


@pytest.mark.parametrize("roles", ["admin", [1], {"admin": True}, [None]])
async def test_roles_must_be_a_list_of_strings(client: httpx.AsyncClient, roles: Any) -> None:
    token = hs_token(claims(roles=roles))
    response = await get_agents(client, token)
    assert_rejected(response, token)
    assert response.json()["detail"] == "Token roles must be a list of strings"


@pytest.mark.parametrize("missing", ["sub", "tenant_id"])
async def test_token_without_identity_is_401(client: httpx.AsyncClient, missing: str) -> None:
    payload = claims()
    del payload[missing]
    token = hs_token(payload)
    assert_rejected(await get_agents(client, token), token)


async def test_empty_tenant_is_401(client: httpx.AsyncClient) -> None:
    token = hs_token(claims(tenant_id=""))
    assert_rejected(await get_agents(client, token), token)


async def post_agent(client: httpx.AsyncClient, token: str) -> httpx.Response:
    """A create: where an identity too long for its column once answered 500."""
    return await client.post("/agents", json={"name": "x", "config": {}}, headers={"Authorization": f"Bearer {token}"})


def signed_claims(**changes: Any) -> str:
    """A correctly signed token whose claims are the defaults with `changes` (None stays a JSON null)."""
    return hs_token({**claims(), **changes})


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"exp": None}, id="exp-null"),
        pytest.param({"exp": str(int(time.time()) + 300)}, id="exp-numeric-string"),
        pytest.param({"exp": True}, id="exp-true"),
        pytest.param({"exp": [int(time.time()) + 300]}, id="exp-list"),
        pytest.param({"iat": None}, id="iat-null"),
        pytest.param({"iat": str(int(time.time()))}, id="iat-numeric-string"),
        pytest.param({"nbf": None}, id="nbf-null"),
        pytest.param({"nbf": "0"}, id="nbf-string"),
    ],
)
async def test_time_claims_must_be_json_numbers(client: httpx.AsyncClient, changes: dict[str, Any]) -> None:
    token = signed_claims(**changes)
    response = await post_agent(client, token)
    assert_rejected(response, token)


async def test_a_token_with_exp_infinity_is_401_not_500(client: httpx.AsyncClient) -> None:
    payload = json.dumps(claims(exp=0)).replace('"exp": 0', '"exp": Infinity')
    signing_input = f"{_b64json({'alg': 'HS256', 'typ': 'JWT'})}.{_b64(payload.encode())}"
    signature = hmac.new(TEST_SECRET.encode(), signing_input.encode(), hashlib.sha256).digest()
    token = f"{signing_input}.{_b64(signature)}"
    assert_rejected(await get_agents(client, token), token)


@pytest.mark.parametrize("claim", ["tenant_id", "sub"])
@pytest.mark.parametrize(
    "value",
    [
        pytest.param("   ", id="blank"),
        pytest.param("\t\n", id="whitespace"),
        pytest.param("a" * 129, id="129-chars"),
        pytest.param("a" * 300, id="300-chars"),
        pytest.param("acme\u0000", id="nul"),
        pytest.param("acme\u001b[2J", id="control"),
        pytest.param("acme\ud800", id="lone-surrogate"),
    ],
)
async def test_identity_claims_must_be_printable_non_blank_and_bounded(
    client: httpx.AsyncClient, claim: str, value: Any
) -> None:
    token = signed_claims(**{claim: value})
    response = await post_agent(client, token)
    assert_rejected(response, token)
    assert response.json()["detail"] == "Token sub or tenant_id is missing or malformed"


async def test_identity_claims_of_128_printable_characters_are_accepted(client: httpx.AsyncClient) -> None:
    token = signed_claims(tenant_id="t" * 128, sub="Zoë O'Brien (ops) " + "s" * 110)
    assert (await get_agents(client, token)).status_code == 200


async def test_malformed_audience_is_401_not_500(client: httpx.AsyncClient) -> None:
    token = hs_token(claims(aud=5))
    assert_rejected(await get_agents(client, token), token)


async def test_leeway_is_capped_at_sixty_seconds() -> None:
    verifier = TokenVerifier(secret=TEST_SECRET, leeway=600)
    now = int(time.time())
    with pytest.raises(Unauthorized, match="expired"):
        await verifier.verify(hs_token(claims(iat=now - 600, exp=now - 90)))


async def test_hs_mode_checks_audience_and_issuer_when_configured() -> None:
    verifier = TokenVerifier(secret=TEST_SECRET, issuer=ISSUER, audience=AUDIENCE)
    principal = await verifier.verify(hs_token(claims(iss=ISSUER, aud=AUDIENCE, roles=["admin"])))
    assert principal.is_admin
    for bad in (claims(iss=ISSUER), claims(aud=AUDIENCE), claims(iss="other", aud=AUDIENCE)):
        with pytest.raises(Unauthorized):
            await verifier.verify(hs_token(bad))


# --- JWKS mode (RS256 / ES256) ------------------------------------------------------------------


@dataclass(frozen=True)
class Signer:
    kid: str
    alg: str
    private_pem: bytes
    public_pem: bytes

    def jwk(self) -> dict[str, Any]:
        data = dict(jwk.construct(self.public_pem, self.alg).to_dict())
        return {**data, "kid": self.kid, "use": "sig"}

    def sign(self, payload: dict[str, Any], *, kid: str | None = None) -> str:
        headers = {"kid": kid or self.kid}
        return str(jwt.encode(payload, self.private_pem.decode(), algorithm=self.alg, headers=headers))


def _signer(kid: str, key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, alg: str) -> Signer:
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return Signer(kid, alg, private_pem, public_pem)


@pytest.fixture(scope="module")
def rsa_signer() -> Signer:
    return _signer("rsa-1", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")


@pytest.fixture(scope="module")
def ec_signer() -> Signer:
    return _signer("ec-1", ec.generate_private_key(ec.SECP256R1()), "ES256")


@pytest.fixture(scope="module")
def stranger() -> Signer:
    """A key the identity provider never published, reusing a published kid."""
    return _signer("rsa-1", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")


def idp_claims(**overrides: Any) -> dict[str, Any]:
    return claims(**{"iss": ISSUER, "aud": AUDIENCE, **overrides})


@pytest.fixture
def key_server(rsa_signer: Signer, ec_signer: Signer) -> Iterator[respx.Route]:
    with respx.mock(assert_all_called=False) as mock:
        yield mock.get(JWKS_URL).mock(
            return_value=httpx.Response(200, json={"keys": [rsa_signer.jwk(), ec_signer.jwk()]})
        )


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def jwks_verifier(http: httpx.AsyncClient, **cache_options: Any) -> TokenVerifier:
    ttl = cache_options.pop("ttl", 300)
    cache = JwksCache(JWKS_URL, http, ttl=ttl, **cache_options)
    return TokenVerifier(jwks=cache, issuer=ISSUER, audience=AUDIENCE, leeway=30)


async def test_rs256_token_from_the_jwks_is_accepted(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    principal = await jwks_verifier(http).verify(rsa_signer.sign(idp_claims(roles=["admin"])))
    assert (principal.sub, principal.tenant_id, principal.is_admin) == ("alice", "tenant-auth", True)


async def test_es256_token_from_the_jwks_is_accepted(
    key_server: respx.Route, http: httpx.AsyncClient, ec_signer: Signer
) -> None:
    principal = await jwks_verifier(http).verify(ec_signer.sign(idp_claims()))
    assert principal.sub == "alice"


async def test_jwks_is_cached_between_verifications(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer, ec_signer: Signer
) -> None:
    verifier = jwks_verifier(http)
    for _ in range(3):
        await verifier.verify(rsa_signer.sign(idp_claims()))
        await verifier.verify(ec_signer.sign(idp_claims()))
    assert key_server.call_count == 1


async def test_missing_audience_is_401_in_jwks_mode(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    payload = idp_claims()
    del payload["aud"]
    # python-jose on its own lets this through even though an audience is configured
    assert (
        jwt.decode(
            rsa_signer.sign(payload),
            rsa_signer.public_pem.decode(),
            algorithms=["RS256"],
            audience=AUDIENCE,
            issuer=ISSUER,
        )["sub"]
        == "alice"
    )
    with pytest.raises(Unauthorized):
        await jwks_verifier(http).verify(rsa_signer.sign(payload))


@pytest.mark.parametrize("aud", ["someone-else", ["someone-else"], "mcp-gateway"])
async def test_wrong_audience_is_401(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer, aud: Any
) -> None:
    with pytest.raises(Unauthorized, match="audience"):
        await jwks_verifier(http).verify(rsa_signer.sign(idp_claims(aud=aud)))


async def test_upstream_audience_next_to_ours_is_401(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    with pytest.raises(Unauthorized, match="Agent tokens"):
        await jwks_verifier(http).verify(rsa_signer.sign(idp_claims(aud=[AUDIENCE, "context-engine"])))


@pytest.mark.parametrize("iss", ["https://evil.example.test/", None])
async def test_wrong_or_missing_issuer_is_401(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer, iss: str | None
) -> None:
    payload = idp_claims()
    if iss is None:
        del payload["iss"]
    else:
        payload["iss"] = iss
    with pytest.raises(Unauthorized):
        await jwks_verifier(http).verify(rsa_signer.sign(payload))


async def test_hs256_signed_with_the_rsa_public_key_is_401(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    token = hmac_token({"alg": "HS256", "typ": "JWT", "kid": rsa_signer.kid}, idp_claims(), rsa_signer.public_pem)
    with pytest.raises(Unauthorized, match="algorithm"):
        await jwks_verifier(http).verify(token)


async def test_alg_none_in_jwks_mode_is_401_without_fetching_keys(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    token = f"{_b64json({'alg': 'none', 'kid': rsa_signer.kid})}.{_b64json(idp_claims())}."
    with pytest.raises(Unauthorized, match="algorithm"):
        await jwks_verifier(http).verify(token)
    assert key_server.call_count == 0


async def test_header_alg_not_matching_the_key_type_is_401(
    key_server: respx.Route, http: httpx.AsyncClient, ec_signer: Signer, rsa_signer: Signer
) -> None:
    token = rsa_signer.sign(idp_claims(), kid=ec_signer.kid)
    with pytest.raises(Unauthorized, match="algorithm"):
        await jwks_verifier(http).verify(token)


async def test_signature_by_an_unpublished_key_is_401(
    key_server: respx.Route, http: httpx.AsyncClient, stranger: Signer
) -> None:
    with pytest.raises(Unauthorized, match="signature"):
        await jwks_verifier(http).verify(stranger.sign(idp_claims()))


async def test_token_without_kid_is_401(key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer) -> None:
    token = str(jwt.encode(idp_claims(), rsa_signer.private_pem.decode(), algorithm="RS256"))
    with pytest.raises(Unauthorized, match="key id"):
        await jwks_verifier(http).verify(token)


async def test_unknown_kid_refetches_the_jwks_at_most_once(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    verifier = jwks_verifier(http, min_refetch_interval=0)
    await verifier.verify(rsa_signer.sign(idp_claims()))
    assert key_server.call_count == 1
    with pytest.raises(Unauthorized, match="unknown key"):
        await verifier.verify(rsa_signer.sign(idp_claims(), kid="rotated-away"))
    assert key_server.call_count == 2


async def test_unknown_kid_on_a_cold_cache_fetches_once(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    with pytest.raises(Unauthorized, match="unknown key"):
        await jwks_verifier(http, min_refetch_interval=0).verify(rsa_signer.sign(idp_claims(), kid="nope"))
    assert key_server.call_count == 1


async def test_unknown_kids_in_a_burst_do_not_hammer_the_key_server(
    key_server: respx.Route, http: httpx.AsyncClient, rsa_signer: Signer
) -> None:
    verifier = jwks_verifier(http)  # default refetch spacing
    await verifier.verify(rsa_signer.sign(idp_claims()))
    for n in range(5):
        with pytest.raises(Unauthorized, match="unknown key"):
            await verifier.verify(rsa_signer.sign(idp_claims(), kid=f"made-up-{n}"))
    assert key_server.call_count == 1


async def test_rotated_in_key_is_found_by_one_refetch(http: httpx.AsyncClient, rsa_signer: Signer) -> None:
    rotated = _signer("rsa-2", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
    with respx.mock() as mock:
        route = mock.get(JWKS_URL).mock(
            side_effect=[
                httpx.Response(200, json={"keys": [rsa_signer.jwk()]}),
                httpx.Response(200, json={"keys": [rsa_signer.jwk(), rotated.jwk()]}),
            ]
        )
        verifier = jwks_verifier(http, min_refetch_interval=0)
        await verifier.verify(rsa_signer.sign(idp_claims()))
        principal = await verifier.verify(rotated.sign(idp_claims()))
        assert principal.sub == "alice"
        assert route.call_count == 2


async def test_cached_keys_survive_a_failing_key_server(http: httpx.AsyncClient, rsa_signer: Signer) -> None:
    with respx.mock() as mock:
        route = mock.get(JWKS_URL).mock(
            side_effect=[
                httpx.Response(200, json={"keys": [rsa_signer.jwk()]}),
                httpx.Response(503),
            ]
        )
        verifier = jwks_verifier(http, ttl=0)  # every verification wants a refresh
        await verifier.verify(rsa_signer.sign(idp_claims()))
        assert (await verifier.verify(rsa_signer.sign(idp_claims(jti="another")))).sub == "alice"
        assert route.call_count == 2


async def test_a_verified_token_is_taken_again_without_a_key_lookup(
    http: httpx.AsyncClient, rsa_signer: Signer, key_server: respx.Route
) -> None:
    verifier = jwks_verifier(http, ttl=0)  # any key lookup would refetch
    token = rsa_signer.sign(idp_claims())
    assert (await verifier.verify(token)).sub == "alice"
    assert (await verifier.verify(token)).sub == "alice"
    assert key_server.call_count == 1


async def test_a_remembered_token_still_expires_at_its_exp() -> None:
    verifier = TokenVerifier(secret=TEST_SECRET, leeway=0)
    expires = int(time.time()) + 1
    token = hs_token(claims(exp=expires))
    assert (await verifier.verify(token)).sub == "alice"
    await asyncio.sleep(expires + 1.1 - time.time())  # python-jose refuses from the second after `exp`
    with pytest.raises(Unauthorized, match="expired"):
        await verifier.verify(token)


async def test_a_rejected_token_is_never_remembered() -> None:
    verifier = TokenVerifier(secret=TEST_SECRET)
    forged = hs_token(claims(), secret="another-secret-of-enough-length!!")
    for _ in range(2):
        with pytest.raises(Unauthorized, match="signature"):
            await verifier.verify(forged)


@pytest.mark.parametrize(
    "response",
    [httpx.Response(503), httpx.Response(200, json=["not", "a", "jwks"]), httpx.Response(200, text="<html>")],
    ids=["503", "list", "html"],
)
async def test_unusable_key_server_is_401_not_500(
    http: httpx.AsyncClient, rsa_signer: Signer, response: httpx.Response
) -> None:
    with respx.mock() as mock:
        mock.get(JWKS_URL).mock(return_value=response)
        with pytest.raises(Unauthorized, match="unavailable"):
            await jwks_verifier(http).verify(rsa_signer.sign(idp_claims()))


async def test_ec_key_on_another_curve_is_refused(http: httpx.AsyncClient) -> None:
    p384 = _signer("ec-384", ec.generate_private_key(ec.SECP384R1()), "ES384")
    published = {**p384.jwk(), "alg": "ES256"}
    token = hmac_token({"alg": "ES256", "kid": p384.kid}, idp_claims(), b"irrelevant")
    with respx.mock() as mock:
        mock.get(JWKS_URL).mock(return_value=httpx.Response(200, json={"keys": [published]}))
        with pytest.raises(Unauthorized, match="curve"):
            await jwks_verifier(http).verify(token)


def test_jwks_mode_requires_issuer_and_audience() -> None:
    cache = JwksCache(JWKS_URL, httpx.AsyncClient(), ttl=300)
    with pytest.raises(ValueError, match="issuer and an audience"):
        TokenVerifier(jwks=cache, issuer=ISSUER)
    with pytest.raises(ValueError, match="exactly one"):
        TokenVerifier()


async def test_app_in_jwks_mode_accepts_idp_tokens_and_refuses_key_confusion(
    database_url: str, tmp_path: Path, rsa_signer: Signer, ec_signer: Signer
) -> None:
    auth = AuthSettings(jwt_secret=None, jwks_url=JWKS_URL, issuer=ISSUER, audience=AUDIENCE)
    settings = make_settings(database_url, tmp_path, auth=auth)
    confused = hmac_token({"alg": "HS256", "kid": rsa_signer.kid}, idp_claims(), rsa_signer.public_pem)
    with respx.mock(assert_all_called=False) as mock:
        mock.get(JWKS_URL).mock(return_value=httpx.Response(200, json={"keys": [rsa_signer.jwk()]}))
        async with running_app(settings) as (_, client):
            ok = await get_agents(client, rsa_signer.sign(idp_claims()))
            assert ok.status_code == 200, ok.text
            assert_rejected(await get_agents(client, confused), confused)
            hs = hs_token(claims(iss=ISSUER, aud=AUDIENCE))
            assert_rejected(await get_agents(client, hs), hs)
    assert not (tmp_path / "auth_secret").exists()
