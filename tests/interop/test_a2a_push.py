"""A2A push notifications, end to end: the real `a2a-sdk` client sets, reads, lists and deletes a
task's configs against the service under uvicorn (PostgreSQL and SQLite), and a real receiver on
loopback (allowed through WEBHOOK_ALLOWED_HOSTS) gets the task each time its state changes, from the
webhook outbox and its delivery worker, with the client's token in `X-A2A-Notification-Token`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import (
    DataPart,
    GetTaskPushNotificationConfigParams,
    MessageSendConfiguration,
    Part,
    PushNotificationAuthenticationInfo,
    PushNotificationConfig,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
)
from sqlalchemy import Uuid, bindparam
from sqlalchemy import text as sql_text

from app.core.db import create_engine
from app.settings import Settings, WebhookSettings
from tests.conftest import make_settings
from tests.factories import create_agent, scripted_config
from tests.interop.conftest import bearer
from tests.interop.test_a2a_server import GATED, a2a_client, last_task, last_task_of, text, user_message
from tests.turns.loopback import serve_on_loopback
from tests.webhooks.receiver import Received, Receiver, receiver_on_free_port, serve

pytestmark = pytest.mark.filterwarnings(
    "ignore:Pydantic serializer warnings:UserWarning"  # the SDK client's own merge of a send's configuration
)
WAIT_SECONDS = 30.0
TOKEN = "push-token-" + uuid.uuid4().hex
PRIVATE_URL = "http://10.20.30.40/hook"


def push_settings(url: str, data_dir: Path, **webhooks: Any) -> Settings:
    values: dict[str, Any] = {"allowed_hosts": ["127.0.0.1"], "poll_seconds": 0.05, "retry_first_seconds": 0.2}
    values.update(webhooks)
    return make_settings(url, data_dir, webhooks=WebhookSettings(**values))


@pytest.fixture(params=["postgresql", "sqlite"])
def database(request: pytest.FixtureRequest, database_url: str, tmp_path: Path) -> str:
    return database_url if request.param == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'push.db'}"


@pytest.fixture
async def service(database: str, tmp_path: Path) -> AsyncIterator[str]:
    async with serve_on_loopback(push_settings(database, tmp_path)) as url:
        yield url


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with serve(receiver_on_free_port()) as running:
        yield running


@pytest.fixture
async def api(service: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=service, timeout=30) as client:
        yield client


@pytest.fixture
def user() -> dict[str, str]:
    return bearer(f"push-{uuid.uuid4().hex[:8]}")


async def arrivals(receiver: Receiver, count: int) -> list[Received]:
    async with asyncio.timeout(WAIT_SECONDS):
        while len(receiver.received) < count:
            await asyncio.sleep(0.05)
    return receiver.received


async def rpc(api: httpx.AsyncClient, agent_id: str, headers: dict[str, str], method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await api.post(f"/a2a/{agent_id}", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def a_task(client: Client) -> str:
    task, _ = await last_task(client, user_message(text("hi")))
    return task.id


async def test_the_card_offers_push_notifications_while_webhooks_are_on(
    api: httpx.AsyncClient, user: dict[str, str], database: str, tmp_path: Path
) -> None:
    agent = await create_agent(api, user, scripted_config(), name="Helper")
    card = (await api.get(f"/a2a/{agent['id']}/.well-known/agent-card.json", headers=user)).json()
    assert card["capabilities"]["pushNotifications"] is True
    if database.startswith("sqlite"):
        return  # a second service on the same SQLite file is not a deployment
    off = push_settings(database, tmp_path / "off", enabled=False)
    async with serve_on_loopback(off) as url, httpx.AsyncClient(base_url=url, timeout=30) as other:
        card = (await other.get(f"/a2a/{agent['id']}/.well-known/agent-card.json", headers=user)).json()
        directory = (await other.get("/a2a", headers=user)).json()["items"]
        refused = await rpc(other, agent["id"], user, "tasks/pushNotificationConfig/list", {"id": str(uuid.uuid4())})
    assert card["capabilities"]["pushNotifications"] is False
    assert [c["capabilities"]["pushNotifications"] for c in directory] == [False]
    assert refused["error"]["code"] == -32003


async def test_set_get_list_delete_round_trip(
    service: str, api: httpx.AsyncClient, user: dict[str, str], receiver: Receiver
) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "done"}), name="Helper")
    async with a2a_client(service, agent["id"], user, streaming=False) as client:
        task_id = await a_task(client)
        first = PushNotificationConfig(id="first", url=receiver.url, token=TOKEN)
        second = PushNotificationConfig(
            id="second",
            url=receiver.url + "?2",
            authentication=PushNotificationAuthenticationInfo(schemes=["Bearer"], credentials="cred-" + TOKEN),
        )
        set_first = await client.set_task_callback(
            TaskPushNotificationConfig(task_id=task_id, push_notification_config=first)
        )
        await client.set_task_callback(TaskPushNotificationConfig(task_id=task_id, push_notification_config=second))
        got = await client.get_task_callback(
            GetTaskPushNotificationConfigParams(id=task_id, push_notification_config_id="second")
        )
    assert set_first.task_id == task_id
    assert (set_first.push_notification_config.id, set_first.push_notification_config.url) == ("first", receiver.url)
    assert set_first.push_notification_config.token is None  # never read back
    assert got.push_notification_config.url == receiver.url + "?2"
    assert got.push_notification_config.authentication.schemes == ["Bearer"]
    assert got.push_notification_config.authentication.credentials is None
    listed = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/list", {"id": task_id})
    assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == ["first", "second"]
    # both were set on a task that had completed: each one hears that state once, at once (awaited
    # before the delete below, which drops a deleted config's deliveries still pending)
    bodies = [json.loads(r.body) for r in await arrivals(receiver, 2)]
    params = {"id": task_id, "pushNotificationConfigId": "first"}
    deleted = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/delete", params)
    assert "error" not in deleted, deleted  # the SDK's answer to a delete: no result (null is left out)
    listed = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/list", {"id": task_id})
    assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == ["second"]
    gone = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/get", params)
    assert gone["error"]["code"] == -32602
    assert [b["status"]["state"] for b in bodies] == ["completed", "completed"]
    by_url = {r.headers.get("x-a2a-notification-token"): r.headers.get("authorization") for r in receiver.received}
    assert by_url == {TOKEN: None, None: f"Bearer cred-{TOKEN}"}


async def test_a_completed_task_is_posted_with_its_token_which_is_stored_sealed(
    service: str, api: httpx.AsyncClient, user: dict[str, str], receiver: Receiver, database: str, tmp_path: Path
) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "Pushed answer."}), name="Helper")
    config = MessageSendConfiguration(push_notification_config=PushNotificationConfig(url=receiver.url, token=TOKEN))
    async with a2a_client(service, agent["id"], user, streaming=False) as client:
        task, _ = await last_task_of(client, user_message(text("hi")), config)
        [arrived] = await arrivals(receiver, 1)
        fetched = await client.get_task(TaskQueryParams(id=task.id))
    assert arrived.headers["x-a2a-notification-token"] == TOKEN
    assert arrived.headers["content-type"] == "application/json"
    pushed = json.loads(arrived.body)
    assert pushed == fetched.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert pushed["status"]["state"] == "completed"
    assert pushed["artifacts"][0]["parts"][0]["text"] == "Pushed answer."
    await asyncio.sleep(0.5)
    assert len(receiver.received) == 1  # once: the write's delivery and the registration's catch-up are one
    listed = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/list", {"id": task.id})
    assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == [task.id]  # the default id
    assert TOKEN not in await stored_text(database, task.id)


async def stored_text(database: str, task_id: str) -> str:
    """Every column of the task's push config and outbox rows, as the database holds them."""
    engine = create_engine(database)
    turn = {"t": uuid.UUID(task_id)}
    try:
        async with engine.connect() as conn:
            rows: list[Any] = []
            for table in ("a2a_push_configs", "webhook_deliveries"):
                query = sql_text(f"SELECT * FROM {table} WHERE turn_id = :t").bindparams(bindparam("t", type_=Uuid()))
                rows += (await conn.execute(query, turn)).all()
    finally:
        await engine.dispose()
    assert rows
    return "\n".join(
        value.decode("latin-1") if isinstance(value, bytes) else str(value) for row in rows for value in row
    )


async def test_an_approval_posts_input_required_then_the_answer_completed(
    service: str, api: httpx.AsyncClient, user: dict[str, str], receiver: Receiver
) -> None:
    agent = await create_agent(api, user, GATED, name="calc")
    config = MessageSendConfiguration(push_notification_config=PushNotificationConfig(url=receiver.url, token=TOKEN))
    async with a2a_client(service, agent["id"], user, streaming=False) as client:
        task, _ = await last_task_of(client, user_message(text("what is 6 times 7?")), config)
        [waiting] = await arrivals(receiver, 1)
        pushed = json.loads(waiting.body)
        assert pushed["id"] == task.id
        assert pushed["status"]["state"] == TaskState.input_required.value
        data = next(p["data"] for p in pushed["status"]["message"]["parts"] if p["kind"] == "data")
        [approval] = data["approvals"]
        decisions = {"decisions": [{"approval_id": approval["approval_id"], "decision": "approve"}]}
        answer = user_message(Part(root=DataPart(data=decisions)), context_id=task.context_id, task_id=task.id)
        await last_task(client, answer)
        _, done = await arrivals(receiver, 2)
    assert json.loads(done.body)["status"]["state"] == "completed"
    assert done.headers["x-a2a-notification-token"] == TOKEN


async def test_a_private_network_url_is_invalid_params_and_nothing_is_stored(
    service: str, api: httpx.AsyncClient, user: dict[str, str]
) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "done"}), name="Helper")
    async with a2a_client(service, agent["id"], user, streaming=False) as client:
        task_id = await a_task(client)
        private = PushNotificationConfig(url=PRIVATE_URL, token=TOKEN)
        with pytest.raises(A2AClientJSONRPCError) as refused:
            await client.set_task_callback(
                TaskPushNotificationConfig(task_id=task_id, push_notification_config=private)
            )
        with pytest.raises(A2AClientJSONRPCError) as refused_send:
            await last_task_of(
                client, user_message(text("hi")), MessageSendConfiguration(push_notification_config=private)
            )
    assert refused.value.error.code == -32602
    assert "10.20.30.40" not in (refused.value.error.message or "")
    assert refused_send.value.error.code == -32602
    listed = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/list", {"id": task_id})
    assert listed["result"] == []
    sessions = (await api.get("/sessions", headers=user)).json()["items"]
    assert len(sessions) == 1  # the refused send started nothing


async def test_another_tenants_task_is_not_found(
    service: str, api: httpx.AsyncClient, user: dict[str, str], receiver: Receiver
) -> None:
    agent = await create_agent(api, user, scripted_config({"text": "done"}), name="Helper")
    async with a2a_client(service, agent["id"], user, streaming=False) as client:
        task_id = await a_task(client)
    stranger = bearer("push-elsewhere")
    theirs = await create_agent(api, stranger, scripted_config(), name="Theirs")
    config = {"url": receiver.url, "token": TOKEN}
    calls = {
        "set": {"taskId": task_id, "pushNotificationConfig": config},
        "get": {"id": task_id},
        "list": {"id": task_id},
        "delete": {"id": task_id, "pushNotificationConfigId": task_id},
    }
    for method, params in calls.items():
        answer = await rpc(api, theirs["id"], stranger, f"tasks/pushNotificationConfig/{method}", params)
        assert answer["error"]["code"] == -32001, (method, answer)
    listed = await rpc(api, agent["id"], user, "tasks/pushNotificationConfig/list", {"id": task_id})
    assert listed["result"] == []


async def test_a_canceled_task_is_posted_canceled(
    service: str, api: httpx.AsyncClient, user: dict[str, str], receiver: Receiver
) -> None:
    slow = scripted_config({"text": "slowly " * 200})
    slow["model"]["chunk_delay_ms"] = 50
    agent = await create_agent(api, user, slow, name="Helper")
    push = PushNotificationConfig(url=receiver.url, token=TOKEN)
    config = MessageSendConfiguration(blocking=False, push_notification_config=push)
    async with a2a_client(service, agent["id"], user, streaming=False) as client:
        task, _ = await last_task_of(client, user_message(text("hi")), config)
        await client.cancel_task(TaskIdParams(id=task.id))
        [arrived] = await arrivals(receiver, 1)
    assert json.loads(arrived.body)["status"]["state"] == "canceled"
    assert arrived.headers["x-a2a-notification-token"] == TOKEN
