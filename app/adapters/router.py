"""AG-UI and Vercel AI SDK endpoints: HTTP only; the mapping is in `ag_ui.py` / `ai_sdk.py`."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from ag_ui.core import ResumeEntry, RunAgentInput
from fastapi import APIRouter, Body, Depends, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.adapters import ag_ui, ai_sdk
from app.adapters.runs import AdapterRuns, Run
from app.approvals.schemas import ApprovalDecision
from app.core.problems import problem_responses
from app.core.sse import SSE_MEDIA_TYPE, EventStreamResponse, event_stream_response
from app.deps import ContainerDep, CurrentPrincipal
from app.errors import InvalidDocument, InvalidInput

router = APIRouter(tags=["adapters"], responses=problem_responses(401, 404, 409, 422))


async def get_runs(container: ContainerDep, principal: CurrentPrincipal) -> AdapterRuns:
    return AdapterRuns(container, principal)


Runs = Annotated[AdapterRuns, Depends(get_runs)]


def _answer(index: int, entry: ResumeEntry) -> tuple[uuid.UUID, ApprovalDecision]:
    """An AG-UI resume entry as an approval decision (the interrupt id is the approval id)."""
    try:
        approval_id = uuid.UUID(entry.interrupt_id)
        if entry.status == "cancelled":
            return approval_id, ApprovalDecision(decision="deny", reason="cancelled by the client")
        return approval_id, ApprovalDecision.model_validate(entry.payload)
    except ValueError as exc:  # a malformed id, or a ValidationError of the payload
        errors = [{"loc": ["body", "resume", str(index)], "msg": str(exc).splitlines()[0], "type": "value_error"}]
        raise InvalidDocument("A resume entry answers an interrupt with an approval decision", errors=errors) from exc


def _stream(description: str) -> dict[int | str, dict[str, Any]]:
    return {200: {"description": description, "content": {SSE_MEDIA_TYPE: {"schema": {"type": "string"}}}}}


class ChatRequest(BaseModel):
    """What `useChat` (`DefaultChatTransport`) posts: the chat id and its UI messages."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=200)
    messages: list[dict[str, Any]]
    trigger: str | None = None


async def _run(runs: AdapterRuns, session_id: uuid.UUID, text: str | None) -> Run:
    """A new turn for new user input; with none, the latest run of the thread's latest turn (a replay)."""
    if text is not None:
        return await runs.start(session_id, text)
    latest = await runs.latest(session_id)
    if latest is None:
        raise InvalidInput("The thread has no turn yet: the last message must be the user's", field="body.messages")
    return latest


@router.post(
    "/ag-ui/agents/{agent_id}",
    operation_id="runAgUiAgent",
    response_model=None,
    response_class=EventStreamResponse,
    responses=_stream("AG-UI events as Server-Sent Events (`data: {json}`)"),
)
async def run_ag_ui(
    agent_id: uuid.UUID,
    body: Annotated[dict[str, Any], Body(description="AG-UI `RunAgentInput`")],
    runs: Runs,
    container: ContainerDep,
) -> Response:
    """An AG-UI run: `threadId` names the session (get-or-create), the last user message is the turn's input.

    A gated call ends the run with an `interrupt` outcome (one interrupt per approval, id = the
    approval id). Decide it through `POST /approvals/{id}`, or answer it in the next run's `resume`
    (`payload`: an approval decision; `cancelled` denies). With no new user message, the thread's
    latest turn is replayed from its latest run.
    """
    try:
        run_input = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        raise InvalidDocument.of(exc, "body", what="The RunAgentInput") from exc
    answers = [_answer(i, entry) for i, entry in enumerate(run_input.resume or [])]
    session_id = await runs.thread(agent_id, run_input.thread_id)
    resumed = await runs.answer(session_id, answers) if answers else None
    run = resumed or await _run(runs, session_id, ag_ui.user_text(run_input.messages))
    translator = ag_ui.AgUiRun(thread_id=run_input.thread_id, run_id=run_input.run_id, messages=run_input.messages)
    return event_stream_response(
        ag_ui.frames(translator, run.events), ping_seconds=container.settings.http.sse_ping_seconds
    )


@router.post(
    "/ai-sdk/agents/{agent_id}/chat",
    operation_id="chatAiSdk",
    response_model=None,
    response_class=EventStreamResponse,
    responses=_stream("A Vercel AI SDK UI message stream (`x-vercel-ai-ui-message-stream: v1`)"),
)
async def chat_ai_sdk(agent_id: uuid.UUID, body: ChatRequest, runs: Runs, container: ContainerDep) -> Response:
    """`useChat` with a `DefaultChatTransport` here: `id` names the session, the last user message is the input."""
    run = await _run(runs, await runs.thread(agent_id, body.id), ai_sdk.user_text(body.messages))
    return _ui_message_stream(run, container)


@router.get(
    "/ai-sdk/agents/{agent_id}/chat/{chat_id}/stream",
    operation_id="resumeAiSdkChat",
    response_model=None,
    response_class=EventStreamResponse,
    responses={**_stream("The chat's latest run, replayed then followed live"), 204: {"description": "No turn yet"}},
)
async def resume_ai_sdk(agent_id: uuid.UUID, chat_id: str, runs: Runs, container: ContainerDep) -> Response:
    """`resumeStream()`: the latest run of the chat's latest turn (after an approval: the resumed part)."""
    run = await runs.latest(await runs.thread(agent_id, chat_id))
    if run is None:
        return Response(status_code=204)
    return _ui_message_stream(run, container)


def _ui_message_stream(run: Run, container: ContainerDep) -> Response:
    translator = ai_sdk.AiSdkRun(message_id=str(run.turn_id))
    response = event_stream_response(
        ai_sdk.frames(translator, run.events), ping_seconds=container.settings.http.sse_ping_seconds
    )
    response.headers.update(ai_sdk.STREAM_HEADER)
    return response
