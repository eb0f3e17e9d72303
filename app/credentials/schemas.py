from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StrictBool

CREDENTIAL_NAME = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
KeyedProvider = Literal["anthropic", "openai", "gemini"]


class CredentialPut(BaseModel):
    """A provider key to store (write-only: no read ever returns it)."""

    model_config = ConfigDict(extra="forbid")
    provider: KeyedProvider
    api_key: SecretStr = Field(min_length=1, max_length=4096)
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
