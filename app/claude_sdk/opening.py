"""How a run on a Claude Code session opens: a new prompt, an approval's resume, or a lost run's continuation.

- A new run sends its input as a prompt (under `prompt_uuid(turn, input, 0)`), in the session's
  process as it is.
- An approval's resume finishes the stopped batch from our side (app/claude_sdk/batch.py) and a new
  process resumes the conversation at the reply that made the batch, with the results as the
  next user message.
- A continuation (`TurnRun.continued`: the turn's replica died or handed it over) picks up at the
  last stored step of the turn: an assistant reply without tool calls is the final answer (no new
  call); a reply with tool calls is a stopped batch, finished and resumed like an approval's (the
  calls the lost run dispatched are sent again under their keys, completed ones never run again);
  the turn's input with no reply stored is a model call made again — the process resumes at the
  entry before the lost run's prompt and sends it anew. All but the first need Claude Code's
  transcript, which lives on the disk of the replica that ran the session
  (`DATA_DIR/claude/<session>/config`): a replica without it fails the turn `server_restarted`,
  except when the turn's input is the whole conversation (nothing to rebuild).
- A regenerated turn (`TurnRun.supersedes`) forks the transcript in place: the process resumes at
  the entry before the superseded turn's prompt (that turn's entries stay on a dead branch) and
  sends the new input, so Claude Code holds exactly the kept conversation.
- A new run whose kept conversation Claude Code does not hold (a fork's first turn, or a regenerated
  turn whose prompt the transcript lacks) rebuilds it from ours: the transcript, if any, is set
  aside and the opening prompt quotes the stored messages before the input (`rebuilt_prompt`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.claude_sdk.batch import finish_batch, tool_results_message
from app.claude_sdk.options import SessionFolders
from app.claude_sdk.transcript import MAX_ATTEMPTS, prompt_uuid
from app.claude_sdk.turn import SdkTurn
from app.providers.base import ChatMessage, ToolCall
from app.runtime.port.journal import Continued, Progress, TurnRun
from app.tools.base import ToolResult

LOST_CODE = "server_restarted"
NOT_HERE = (
    "Claude Code's transcript of this session is not on this replica (DATA_DIR/claude/<session> is per "
    "replica unless shared): the turn cannot continue here"
)

SESSION_LOST = ("sdk_session_lost", "Claude Code's transcript of this session is not on this replica")
"""An approval's resume on a replica without the transcript (a continuation fails `server_restarted`)."""


@dataclass(frozen=True, slots=True)
class Opening:
    prompt: dict[str, Any]
    """The first user message of the run (a text prompt, or the tool results of a stopped batch)."""
    resume_at: str | None = None
    """Start a new process at this transcript entry (None: the session's process as it is)."""
    restart: bool = False
    """Close the session's process first (a new one resumes the conversation from the transcript)."""


def prompt_message(run: TurnRun, text: str, attempt: int = 0) -> dict[str, Any]:
    message = {"role": "user", "content": text}
    return {"type": "user", "message": message, "parent_tool_use_id": None,
            "uuid": prompt_uuid(run.ident.turn_id, text, attempt)}  # fmt: skip


def rebuilt_prompt(run: TurnRun) -> dict[str, Any]:
    """The run's prompt with the stored conversation before it, for a Claude Code session that lacks it
    (under the uuid of the plain prompt, so a continuation finds it)."""
    lines = ["The conversation so far, as this service stored it:"]
    for message in run.history[:-1]:
        lines.append(_quoted(message))
    lines += ["", "The user's new message:", run.input]
    prompt = prompt_message(run, run.input)
    prompt["message"] = {"role": "user", "content": "\n".join(lines)}
    return prompt


def _quoted(message: ChatMessage) -> str:
    if message.role == "tool":
        failed = " (error)" if message.is_error else ""
        return f"[tool result of {message.name or message.tool_call_id}{failed}] {message.content}"
    calls = "".join(f"\n[{message.role} called {c.name} with {json.dumps(c.arguments)}]" for c in message.tool_calls)
    return f"[{message.role}] {message.content}{calls}"


async def open_run(turn: SdkTurn, run: TurnRun, folders: SessionFolders) -> Opening | Progress:
    if run.continued is not None:
        return await _continued(turn, run, folders)
    if run.resumed:
        calls, lost = run.pending, SESSION_LOST
        return await _batch(turn, folders, calls, loop=run.loop_count, answered={}, continued=None, lost=lost)
    if run.supersedes is not None:
        return await _regenerated(run, folders)
    if len(run.history) > 1 and not await asyncio.to_thread(folders.has_transcript, run.ident.session_id):
        return Opening(rebuilt_prompt(run), restart=True)
    return Opening(prompt_message(run, run.input))


async def _regenerated(run: TurnRun, folders: SessionFolders) -> Opening:
    """Resume Claude Code before the superseded turn's prompt; rebuild from ours if its transcript lacks it."""
    assert run.supersedes is not None
    session_id = run.ident.session_id
    transcript = await asyncio.to_thread(folders.transcript, session_id)
    sent = transcript.prompt(run.supersedes.turn_id, run.supersedes.input)
    if sent is None or sent.parent is None:
        await asyncio.to_thread(folders.set_aside, session_id)
        prompt = rebuilt_prompt(run) if len(run.history) > 1 else prompt_message(run, run.input)
        return Opening(prompt, restart=True)
    return Opening(prompt_message(run, run.input), resume_at=sent.parent, restart=True)


async def _continued(turn: SdkTurn, run: TurnRun, folders: SessionFolders) -> Opening | Progress:
    continued = run.continued
    assert continued is not None
    last = run.history[-1] if run.history else ChatMessage(role="user", content=run.input)
    if last.role == "assistant" and not last.tool_calls:
        progress = turn.progress
        progress.status, progress.final_output, progress.last_text = "completed", last.content, last.content
        return progress
    session_id = run.ident.session_id
    here = await asyncio.to_thread(folders.has_transcript, session_id)
    if last.role == "user":
        if not here:
            return Opening(prompt_message(run, last.content)) if len(run.history) <= 1 else _lost()
        return await _again(run, folders, last.content)
    if not here:
        return _lost()
    reply, answered = _stopped_batch(run.history)
    loop = run.loop_count - 1 if len(answered) == len(reply.tool_calls) else run.loop_count
    calls, lost = list(reply.tool_calls), (LOST_CODE, NOT_HERE)
    return await _batch(turn, folders, calls, loop=loop, answered=answered, continued=continued, lost=lost)


async def _again(run: TurnRun, folders: SessionFolders, text: str) -> Opening | Progress:
    """The model call of a prompt whose reply was lost, made again from the entry before the prompt."""
    session_id = run.ident.session_id
    transcript = await asyncio.to_thread(folders.transcript, session_id)
    sent = transcript.prompt(run.ident.turn_id, text)
    if sent is None:  # the lost run's process never recorded it: the conversation goes on as it is
        return Opening(prompt_message(run, text), restart=True)
    if sent.attempt + 1 >= MAX_ATTEMPTS:
        return _lost(f"the turn was continued {MAX_ATTEMPTS} times")
    if sent.parent is None:  # the prompt opened the conversation: nothing before it to keep
        await asyncio.to_thread(folders.set_aside, session_id)
    return Opening(prompt_message(run, text, sent.attempt + 1), resume_at=sent.parent, restart=True)


async def _batch(
    turn: SdkTurn,
    folders: SessionFolders,
    calls: Sequence[ToolCall],
    *,
    loop: int,
    answered: dict[str, ToolResult],
    continued: Continued | None,
    lost: tuple[str, str],
) -> Opening | Progress:
    """Finish a stopped batch, then resume Claude Code at the reply that made it."""
    turn.progress.loop_count = loop
    turn.had_tools = True
    results = await finish_batch(turn, calls, answered=answered, continued=continued)
    if results is None:
        return turn.progress
    transcript = await asyncio.to_thread(folders.transcript, turn.run.ident.session_id)
    point = transcript.batch([call.id for call in calls])
    if point is None:
        return _failed(*lost)
    prompt = tool_results_message(calls, results, skip=point.answered)
    return Opening(prompt, resume_at=point.entry, restart=True)


def _stopped_batch(history: Sequence[ChatMessage]) -> tuple[ChatMessage, dict[str, ToolResult]]:
    """The turn's last reply with tool calls, and the results of it the conversation stores."""
    index = max(i for i, m in enumerate(history) if m.role == "assistant")
    answered = {
        m.tool_call_id: ToolResult(m.content, is_error=m.is_error)
        for m in history[index + 1 :]
        if m.role == "tool" and m.tool_call_id is not None
    }
    return history[index], answered


def _lost(message: str = NOT_HERE) -> Progress:
    return _failed(LOST_CODE, message)


def _failed(code: str, message: str) -> Progress:
    return Progress(status="failed", error={"code": code, "message": message})
