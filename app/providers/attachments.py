"""Attachments as each provider takes them: what it takes natively, and text files inlined as text."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from app.providers.base import Attachment

ATTACHMENT_UNSUPPORTED = "attachment_unsupported"
"""The rule code of a file part a runtime, a provider or the service does not take."""
IMAGE_TOKENS = 1600
"""About what one image costs (Anthropic: about (width x height) / 750 tokens; a 1092x1092 one ~1600)."""
NATIVE = {
    "anthropic": frozenset({"image", "pdf"}),
    "openai": frozenset({"image", "pdf"}),
    "gemini": frozenset({"image", "pdf"}),
    "scripted": frozenset({"image", "pdf"}),
}
"""The kinds each provider takes as binary blocks; every provider takes text files (inlined)."""


def takes(provider: str, kind: str) -> bool:
    return kind == "text" or kind in NATIVE.get(provider, frozenset())


def base64_of(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def missing(attachment: Attachment) -> str:
    return f"[the attached file {attachment.name!r} is no longer available]"


def inlined(attachment: Attachment, files: Mapping[str, bytes]) -> str:
    """A text file as the model reads it: its name, then its content."""
    data = files.get(attachment.file_id)
    if data is None:
        return missing(attachment)
    return f"[attached file {attachment.name!r} ({attachment.content_type})]\n{data.decode('utf-8', 'replace')}"


def estimated_tokens(attachment: Attachment) -> int:
    """For the prompt estimate: a flat cost per image; text and PDF by size (about 4 bytes a token)."""
    return IMAGE_TOKENS if attachment.kind == "image" else max(1, attachment.size // 4)


def described(attachment: Attachment) -> str:
    """What a compaction summary or a text-only view says for an attachment."""
    return f"[attached {attachment.kind} {attachment.name!r}]"
