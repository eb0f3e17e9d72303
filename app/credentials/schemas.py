from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, StrictBool
from pydantic_core import PydanticCustomError

CREDENTIAL_NAME = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
KeyedProvider = Literal["anthropic", "openai", "gemini"]
MAX_KEY_CHARS = 4096


def printable_ascii(key: str) -> bool:
    """A key travels in an HTTP header: anything but printable ASCII (a pasted `…`, a space, a line
    break) would only fail every turn later."""
    return all("!" <= char <= "~" for char in key)


def _printable_ascii(key: SecretStr) -> SecretStr:
    if not printable_ascii(key.get_secret_value()):
        raise PydanticCustomError("api_key_not_ascii", "an API key is printable ASCII without spaces")
    return key


ApiKey = Annotated[SecretStr, Field(min_length=1, max_length=MAX_KEY_CHARS), AfterValidator(_printable_ascii)]


class CredentialPut(BaseModel):
    """A provider key to store (write-only: no read ever returns it)."""

    model_config = ConfigDict(extra="forbid")
    provider: KeyedProvider
    api_key: ApiKey
    base_url: str | None = Field(
        default=None,
        max_length=2048,
        pattern=r"^https?://",
        description="An OpenAI-compatible server (vLLM, Ollama, LM Studio, TGI), a proxy, or a test double.",
    )


class CredentialView(BaseModel):
    name: str
    provider: KeyedProvider
    base_url: str | None
    last4: str | None = Field(description="The key's last 4 characters (null for keys under 12 characters).")
    fingerprint: str = Field(description="`sha256:` + the first 16 hex digits of SHA-256 of the key.")
    created_at: datetime
    updated_at: datetime


class CredentialPage(BaseModel):
    items: list[CredentialView]
    next_cursor: str | None = None
    byok_only: bool = Field(description="When true, turns of this tenant never use the operator's environment keys.")


class CredentialSettingsUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    byok_only: StrictBool
