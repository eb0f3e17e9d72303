"""Usage for a call whose provider did not report it (an OpenAI-compatible server without a usage
chunk, a Gemini proxy that drops `usageMetadata`): counted from the text with the documented
estimate of `app/providers/context_windows.py`, so budgets and quotas still see the call."""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.providers.base import ModelRequest, ToolCall
from app.providers.context_windows import MESSAGE_OVERHEAD_TOKENS, estimate_tokens


def estimated_usage(request: ModelRequest, text: str, calls: Sequence[ToolCall], provider: str) -> tuple[int, int]:
    """(input, output) tokens: the prompt (system, history, tool declarations) and the reply."""
    prompt_parts = [request.system, *(_message_text(m.content, m.tool_calls) for m in request.messages)]
    prompt_parts.extend(json.dumps([spec.name, spec.description, spec.input_schema]) for spec in request.tools)
    framing = MESSAGE_OVERHEAD_TOKENS * (len(request.messages) + 1)
    input_tokens = framing + sum(estimate_tokens(part, provider) for part in prompt_parts)
    output_tokens = estimate_tokens(_message_text(text, calls), provider)
    return input_tokens, output_tokens


def _message_text(content: str, calls: Sequence[ToolCall]) -> str:
    if not calls:
        return content
    return content + "".join(f"{call.name}{json.dumps(call.arguments)}" for call in calls)
