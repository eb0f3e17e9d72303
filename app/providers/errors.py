"""One error vocabulary for every provider: HTTP statuses to codes, and keys kept out of messages."""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.providers.base import ProviderError

_CODE_BY_STATUS = {
    401: "provider_auth_failed",
    402: "provider_auth_failed",
    403: "provider_auth_failed",
    408: "provider_timeout",
    429: "provider_rate_limited",
    503: "provider_overloaded",
    529: "provider_overloaded",
}
_KEY_PATTERNS = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]+"  # Anthropic
    r"|sk-[A-Za-z0-9_\-]{16,}"  # OpenAI and most compatible servers
    r"|AIza[0-9A-Za-z_\-]{20,}"  # Google API keys
)
MAX_DETAIL_CHARS = 300


def code_for_status(status: int) -> str:
    """The error code of a failed HTTP answer, the same for every provider."""
    known = _CODE_BY_STATUS.get(status)
    if known:
        return known
    return "provider_bad_request" if 400 <= status < 500 else "provider_error"


def redact(message: str, secrets: Iterable[str | None] = ()) -> str:
    """The message without the given secrets nor anything shaped like a provider key."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "[redacted]")
    return _KEY_PATTERNS.sub("[redacted]", message)


def status_error(
    vendor: str, status: int, detail: str | None, *, secrets: Iterable[str | None], code: str | None = None
) -> ProviderError:
    """A ProviderError for an HTTP error answer, its detail clipped and redacted."""
    message = f"{vendor} returned HTTP {status}" if status >= 400 else f"{vendor} sent an error in the stream"
    if detail:
        message += f": {detail[:MAX_DETAIL_CHARS]}"
    return ProviderError(code or code_for_status(status), redact(message, secrets))
