"""OpenAPI links: which response names the object the next operation takes, so a client generator
or a stateful tester (schemathesis) can walk create → read → change → delete with real ids."""

from __future__ import annotations

from typing import Any

ID = "$response.body#/id"
FIRST_ITEM = "$response.body#/items/0/id"

_AGENT = {"path.agent_id": ID}
_SESSION = {"path.session_id": ID}
_SCHEDULE = {"path.schedule_id": ID}
_TURN = {"path.turn_id": FIRST_ITEM}
_MEMORY = {"path.namespace": "$request.path.namespace", "path.key": "$request.path.key"}

LINKS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("createAgent", "201"): {
        "GetAgent": {"operationId": "getAgent", "parameters": _AGENT},
        "UpdateAgent": {"operationId": "updateAgent", "parameters": _AGENT},
        "ListAgentVersions": {"operationId": "listAgentVersions", "parameters": _AGENT},
        "GetAgentVersion": {
            "operationId": "getAgentVersion",
            "parameters": {**_AGENT, "path.version": "$response.body#/version"},
        },
        "CreateSession": {"operationId": "createSession", "requestBody": {"agent_id": ID}},
        "CreateSchedule": {"operationId": "createSchedule", "requestBody": {"agent_id": ID}},
        "ArchiveAgent": {"operationId": "archiveAgent", "parameters": _AGENT},
    },
    ("createSession", "201"): {
        "GetSession": {"operationId": "getSession", "parameters": _SESSION},
        "ListSessionMessages": {"operationId": "listSessionMessages", "parameters": _SESSION},
        "CreateTurn": {"operationId": "createTurn", "parameters": _SESSION},
        "ListTurns": {"operationId": "listTurns", "parameters": _SESSION},
        "CloseSession": {"operationId": "closeSession", "parameters": _SESSION},
    },
    ("listTurns", "200"): {
        "GetTurn": {"operationId": "getTurn", "parameters": _TURN},
        "StreamTurnEvents": {"operationId": "streamTurnEvents", "parameters": _TURN},
        "ListTurnDecisions": {"operationId": "listTurnDecisions", "parameters": _TURN},
        "CancelTurn": {"operationId": "cancelTurn", "parameters": _TURN},
    },
    ("listApprovals", "200"): {
        "GetApproval": {"operationId": "getApproval", "parameters": {"path.approval_id": FIRST_ITEM}},
    },
    ("createSchedule", "201"): {
        "GetSchedule": {"operationId": "getSchedule", "parameters": _SCHEDULE},
        "ListScheduleFirings": {"operationId": "listScheduleFirings", "parameters": _SCHEDULE},
        "DeleteSchedule": {"operationId": "deleteSchedule", "parameters": _SCHEDULE},
    },
    ("putMemoryItem", "201"): {
        "GetMemoryItem": {"operationId": "getMemoryItem", "parameters": _MEMORY},
        "DeleteMemoryItem": {"operationId": "deleteMemoryItem", "parameters": _MEMORY},
    },
}


def add_links(schema: dict[str, Any]) -> None:
    """Attach `LINKS` to the responses of the operations that exist (others are skipped)."""
    operations = {
        operation.get("operationId"): operation
        for path in schema.get("paths", {}).values()
        for operation in path.values()
    }
    known = set(operations)
    for (operation_id, status), links in LINKS.items():
        response = operations.get(operation_id, {}).get("responses", {}).get(status)
        if response is not None:
            response["links"] = {name: link for name, link in links.items() if link["operationId"] in known}
