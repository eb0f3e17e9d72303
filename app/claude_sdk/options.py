"""How one session's Claude Code process is started: its options, its folders, its environment.

Each session gets `DATA_DIR/claude/<session_id>/work` as working directory (the only place
`claude:` tools may touch) and `…/config` as `CLAUDE_CONFIG_DIR` (Claude Code's transcripts, outside
the working directory). The session id is Claude Code's session id, so a later process resumes the
same conversation (`--resume`) after an idle close or a restart. Nothing of the service's own
environment reaches the process: every inherited variable is blanked except a few harmless ones;
the process gets the provider key and URL it needs, with Claude Code's telemetry, error reporting,
auto-update and other non-essential traffic off, and its subprocesses' credentials scrubbed.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import CanUseTool, HookMatcher, McpSdkServerConfig

from app.claude_sdk.transcript import Transcript

KEPT_ENV = frozenset({"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"})
QUIET_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


@dataclass(frozen=True, slots=True)
class SessionFolders:
    root: Path

    @classmethod
    def of(cls, data_dir: Path, session_id: uuid.UUID) -> SessionFolders:
        return cls(data_dir.resolve() / "claude" / str(session_id))

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def config(self) -> Path:
        return self.root / "config"

    def create(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.config.mkdir(parents=True, exist_ok=True, mode=0o700)

    def transcripts(self, session_id: uuid.UUID) -> list[Path]:
        projects = self.config / "projects"
        return sorted(projects.glob(f"*/{session_id}.jsonl")) if projects.is_dir() else []

    def has_transcript(self, session_id: uuid.UUID) -> bool:
        return bool(self.transcripts(session_id))

    def transcript(self, session_id: uuid.UUID) -> Transcript:
        """Claude Code's record of the conversation (blocking I/O)."""
        return Transcript.read(self.transcripts(session_id))

    def set_aside(self, session_id: uuid.UUID) -> None:
        """Keep the transcript under another name: the next process starts the conversation anew (blocking I/O)."""
        for path in self.transcripts(session_id):
            path.rename(path.with_suffix(".jsonl.set-aside"))


@dataclass(frozen=True, slots=True)
class Provider:
    api_key: str | None = field(repr=False)
    base_url: str | None


def cli_environment(provider: Provider, folders: SessionFolders, *, max_tokens: int) -> dict[str, str]:
    env = {key: "" for key in os.environ if key not in KEPT_ENV}
    env |= QUIET_ENV
    env |= {
        "HOME": str(folders.config),
        "CLAUDE_CONFIG_DIR": str(folders.config),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(max_tokens),
    }
    if provider.api_key:
        env["ANTHROPIC_API_KEY"] = provider.api_key
    if provider.base_url:
        env["ANTHROPIC_BASE_URL"] = provider.base_url
    return env


def session_options(
    *,
    session_id: uuid.UUID,
    snapshot: dict[str, Any],
    folders: SessionFolders,
    provider: Provider,
    native_tools: list[str],
    server: McpSdkServerConfig | None,
    can_use_tool: CanUseTool,
    hooks: dict[Any, list[HookMatcher]],
    cli_path: Path | None = None,
    resume_at: str | None = None,
) -> ClaudeAgentOptions:
    """`resume_at`: continue the conversation from that transcript entry (a call that waited for a human)."""
    model = snapshot["model"]
    folders.create()
    resume = folders.has_transcript(session_id)
    return ClaudeAgentOptions(
        system_prompt=str(snapshot.get("system_prompt") or ""),
        model=str(model["name"]),
        tools=list(native_tools),
        mcp_servers={server["name"]: server} if server is not None else {},
        strict_mcp_config=True,
        setting_sources=[],
        permission_mode="default",
        can_use_tool=can_use_tool,
        hooks=hooks,
        include_partial_messages=True,
        verbatim_prompts=True,
        cwd=folders.work,
        env=cli_environment(provider, folders, max_tokens=int(model.get("max_tokens", 1024))),
        resume=str(session_id) if resume else None,
        session_id=None if resume else str(session_id),
        resume_session_at=resume_at if resume else None,
        cli_path=cli_path,
    )
