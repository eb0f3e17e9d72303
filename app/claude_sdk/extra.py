"""The `claude` extra: claude-agent-sdk, which bundles the Claude Code CLI (most of an install's size),
is not a dependency of the service. Without it app/main.py puts an `UnavailableRuntime` in the
`claude_sdk` runtime's place: agents cannot choose it, and a turn of one that did fails with
`runtime_unavailable`.

This module imports nothing of the SDK, so it can be asked whether the SDK is there."""

from __future__ import annotations

SDK_PACKAGE = "claude_agent_sdk"
RUNTIME_UNAVAILABLE = "runtime_unavailable"
NOT_INSTALLED = (
    "the claude_sdk runtime is not installed in this service: install the `claude` extra"
    " (pip install 'agent-runtime[claude]') or build the image with --build-arg WITH_CLAUDE=true"
)


def sdk_missing(exc: ImportError) -> bool:
    """Whether `exc` is claude-agent-sdk's absence; not an installed SDK that lacks a name we import
    (another version), nor a fault in our code: those should fail the start."""
    name = exc.name or ""
    return isinstance(exc, ModuleNotFoundError) and (name == SDK_PACKAGE or name.startswith(SDK_PACKAGE + "."))
