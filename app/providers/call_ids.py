"""A tool call's id: unique among the calls of its session, given once, when the model's reply arrives.

Providers do not all give one: OpenAI-compatible servers send calls without an id or with an empty
one, repeat `call_0` in every reply, or use one id twice in a reply; a scripted session repeats its
ids after a rollback. Every id the turn's tool ledger, approvals, events and the conversation
sent back to the model name a call by is the one given here, so a provider's id is kept only when
no call of the session's conversation (this reply's earlier calls included) has it and every
provider accepts it back (`[A-Za-z0-9_-]`, at most 40 characters: OpenAI's limit, Anthropic's
pattern). Otherwise the call gets one of ours, and the provider's id is kept beside it. The reply
is stored with these ids, so a resume or a continuation reads back the very same ones.
"""

from __future__ import annotations

import dataclasses
import string
import uuid
from collections.abc import Iterable, Sequence

from app.providers.base import ChatMessage, ToolCall

MAX_ID_LENGTH = 40
ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_-")


def conversation_call_ids(messages: Iterable[ChatMessage]) -> set[str]:
    return {call.id for message in messages for call in message.tool_calls}


def with_own_ids(calls: Sequence[ToolCall], taken: Iterable[str]) -> list[ToolCall]:
    """`calls` with an id each that no call of `taken` (the conversation's) and no other call here has."""
    used = set(taken)
    named: list[ToolCall] = []
    for call in calls:
        if not _usable(call.id) or call.id in used:
            call = dataclasses.replace(call, id=new_call_id(), provider_id=call.id or None)
        used.add(call.id)
        named.append(call)
    return named


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex}"


def _usable(call_id: str) -> bool:
    return 0 < len(call_id) <= MAX_ID_LENGTH and ID_CHARACTERS.issuperset(call_id)
