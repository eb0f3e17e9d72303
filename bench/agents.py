"""The bench's tenant, token and agents, shared by the full run and the scripted-only mode."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from bench.load import ArTarget, FloorTarget, ar_turn, floor_turn, run_load

SECRET = "bench-secret"
TENANT = "bench"
TOKENS_PER_REPLY = 50
FIFTY_WORDS = " ".join(f"word{i}" for i in range(TOKENS_PER_REPLY)) + "."
TurnFactory = Callable[[httpx.AsyncClient], Awaitable[Any]]


def mint_token() -> str:
    from app.auth.verify import mint_user_token

    return mint_user_token(SECRET, tenant_id=TENANT, sub="bench-user", roles=[], ttl_seconds=3600)


async def create_agent(url: str, token: str, name: str, config: dict[str, Any]) -> str:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        resp = await client.post(
            f"{url}/agents",
            json={"name": name, "config": config},
            headers={"Authorization": f"Bearer {token}"},
        )
    if resp.status_code != 201:
        raise RuntimeError(f"creating agent {name} failed: {resp.status_code} {resp.text[:500]}")
    return str(resp.json()["id"])


BENCH_LIMITS = {"max_concurrent_turns": 10_000, "token_quota": {"period": "month", "tokens": 10**15}}


def _admin_headers() -> dict[str, str]:
    from app.auth.verify import mint_user_token

    admin = mint_user_token(SECRET, tenant_id=TENANT, sub="bench-admin", roles=["admin"], ttl_seconds=3600)
    return {"Authorization": f"Bearer {admin}"}


async def _admin_call(method: str, url: str, expect: int, what: str, body: Any = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        resp = await client.request(method, url, json=body, headers=_admin_headers())
    if resp.status_code != expect:
        raise RuntimeError(f"{what} failed: {resp.status_code} {resp.text[:500]}")
    return resp


async def get_limits(url: str) -> dict[str, Any]:
    """The tenant's ceilings as `PUT /limits` takes them back."""
    current = (await _admin_call("GET", f"{url}/limits", 200, "reading the tenant's limits")).json()
    return {key: value for key, value in current.items() if key not in ("updated_by", "updated_at")}


async def put_limits(url: str, limits: dict[str, Any]) -> None:
    await _admin_call("PUT", f"{url}/limits", 200, "setting the tenant's limits", limits)


async def put_policies(url: str, rules: list[dict[str, Any]]) -> None:
    await _admin_call("PUT", f"{url}/policies", 200, "replacing the tenant's policies", {"policies": rules})


async def create_webhook(url: str, target: str, events: list[str]) -> str:
    resp = await _admin_call("POST", f"{url}/webhooks", 201, "subscribing a webhook", {"url": target, "events": events})
    return str(resp.json()["id"])


async def delete_webhook(url: str, webhook_id: str) -> None:
    await _admin_call("DELETE", f"{url}/webhooks/{webhook_id}", 204, "deleting the webhook")


LLM_AGENT = {
    "model": {"provider": "anthropic", "name": "claude-mock", "max_tokens": 1024},
    "tools": ["builtin:echo"],
    "limits": {"max_loops": 4},
}
OPENAI_AGENT = {
    "model": {"provider": "openai", "name": "gpt-mock", "max_tokens": 1024},
    "tools": ["builtin:echo"],
    "limits": {"max_loops": 4},
}
SCRIPTED_AGENT = {"model": {"provider": "scripted", "script": [{"text": FIFTY_WORDS}]}, "limits": {"max_loops": 4}}


async def warm_up(name: str, fn: TurnFactory, turns: int, *, concurrency: int = 5) -> None:
    """At the highest concurrency measured, so pools are as large as in steady state (at least
    `turns` turns, and two per client)."""
    if turns <= 0:
        return
    load = await run_load(fn, concurrency=concurrency, turns=max(turns, 2 * concurrency), cap_seconds=60)
    if load.errors:
        print(f"[bench] warm-up {name}: {load.errors} errors {load.error_kinds()}", file=sys.stderr)


def ar_fn(target: ArTarget) -> TurnFactory:
    return lambda client: ar_turn(client, target)


def floor_fn(target: FloorTarget) -> TurnFactory:
    return lambda client: floor_turn(client, target)
