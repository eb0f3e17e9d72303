"""What an upload really is, told from its bytes: the declared type is a hint, never trusted.

Binary formats are known by their signatures; anything else must be UTF-8 text (no NUL), and is
then plain text, CSV, Markdown or JSON by the declared type or the name's extension (JSON must
parse). A declared type that the bytes contradict is refused: the body lies about its type.
"""

from __future__ import annotations

from typing import Literal

import orjson

IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
PDF = "application/pdf"
TEXT_TYPES = ("text/plain", "text/csv", "text/markdown", "application/json")
ACCEPTED = (*IMAGE_TYPES, PDF, *TEXT_TYPES)
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", PDF),
)
_EXTENSIONS = {".csv": "text/csv", ".md": "text/markdown", ".markdown": "text/markdown", ".json": "application/json"}
_VAGUE = ("", "application/octet-stream", "binary/octet-stream")


class UnsupportedType(ValueError):
    """The bytes are none of the accepted types, or not the type the upload declared."""


def sniff(data: bytes, *, declared: str | None, name: str) -> str:
    """The content type of `data`; raises `UnsupportedType`."""
    hint = (declared or "").split(";")[0].strip().lower()
    binary = _binary_type(data)
    if binary is not None:
        if hint not in _VAGUE and hint != binary:
            raise UnsupportedType(f"the body is {binary}, not the declared {hint}")
        return binary
    if b"\x00" in data:
        raise UnsupportedType(f"the body is none of the accepted types ({', '.join(ACCEPTED)})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsupportedType(f"the body is none of the accepted types ({', '.join(ACCEPTED)})") from None
    if hint in (*IMAGE_TYPES, PDF):
        raise UnsupportedType(f"the body is text, not the declared {hint}")
    kind = hint if hint in TEXT_TYPES else _by_extension(name)
    if hint not in _VAGUE and not hint.startswith("text/") and hint not in TEXT_TYPES:
        raise UnsupportedType(f"{hint} is not an accepted type ({', '.join(ACCEPTED)})")
    if kind == "application/json":
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            raise UnsupportedType("the body is not JSON") from None
    return kind


def _binary_type(data: bytes) -> str | None:
    for signature, content_type in _SIGNATURES:
        if data.startswith(signature):
            return content_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _by_extension(name: str) -> str:
    dot = name.rfind(".")
    return _EXTENSIONS.get(name[dot:].lower(), "text/plain") if dot >= 0 else "text/plain"


def kind_of(content_type: str) -> Literal["image", "pdf", "text"]:
    """`image`, `pdf` or `text`: what a provider has to be able to take."""
    if content_type in IMAGE_TYPES:
        return "image"
    return "pdf" if content_type == PDF else "text"
