"""A turn's file parts as attachments: each file the caller's own, of a kind the agent's provider takes.

Checked before the turn starts: an unknown or foreign file is 404, a part the provider (or the
runtime) cannot take is 422 `attachment_unsupported`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.auth.principal import Principal
from app.core.db import unit_of_work
from app.errors import NotFound, RuleViolation
from app.files.repository import FileRepository
from app.files.sniff import kind_of
from app.models import File
from app.providers.attachments import ATTACHMENT_UNSUPPORTED, takes
from app.providers.base import Attachment

PartType = Literal["image", "file"]


async def attachments_for(
    db: AsyncSession,
    principal: Principal,
    parts: Sequence[tuple[str, uuid.UUID]],
    snapshot: Mapping[str, Any],
    session_id: uuid.UUID,
) -> tuple[Attachment, ...]:
    """The parts' files as attachments; the files not yet tied to a session are tied to this one
    (retention deletes them with it)."""
    if not parts:
        return ()
    if snapshot.get("runtime") == "claude_sdk":
        raise RuleViolation(ATTACHMENT_UNSUPPORTED, "the claude_sdk runtime takes text input only")
    provider = str(snapshot["model"]["provider"])
    repo = FileRepository(db, principal.tenant_id)
    found: list[Attachment] = []
    for part_type, file_id in parts:
        file = await repo.get(principal, file_id)
        if file is None:
            raise NotFound(f"File {file_id} not found")
        found.append(_checked(file, part_type, provider))
    await repo.tie_to_session([uuid.UUID(a.file_id) for a in found], session_id)
    return tuple(found)


def _checked(file: File, part_type: str, provider: str) -> Attachment:
    kind = kind_of(file.content_type)
    if part_type == "image" and kind != "image":
        raise RuleViolation(ATTACHMENT_UNSUPPORTED, f"file {file.id} is {file.content_type}: use a `file` part")
    if part_type == "file" and kind == "image":
        raise RuleViolation(ATTACHMENT_UNSUPPORTED, f"file {file.id} is {file.content_type}: use an `image` part")
    if not takes(provider, kind):
        raise RuleViolation(ATTACHMENT_UNSUPPORTED, f"the {provider} provider cannot take a {kind} attachment")
    return Attachment(
        file_id=str(file.id),
        kind=kind,
        name=file.name,
        content_type=file.content_type,
        size=file.size,
    )


class FileAttachments:
    """The engine's `Attachments` (app/runtime/engine.py): resolves a turn's file parts in a transaction of its own."""

    def __init__(self, session_factory: async_sessionmaker[AsyncSession]) -> None:
        self._session_factory = session_factory

    async def resolve(
        self, caller: Principal, parts: Sequence[tuple[str, uuid.UUID]], snapshot: Mapping[str, Any],
        session_id: uuid.UUID,
    ) -> tuple[Attachment, ...]:  # fmt: skip
        async with unit_of_work(self._session_factory) as db:
            return await attachments_for(db, caller, parts, snapshot, session_id)
