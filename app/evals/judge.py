"""The `judge` check: a model grades an answer against a rubric, 0 to 1, with a reason.

The judge is called through the tenant's own providers and credentials (the registry every turn
uses), and its tokens are returned so the runner stores them as usage of kind `eval_judge`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from app.evals.checks import Score
from app.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError
from app.providers.registry import ProviderRegistry

JUDGE_MAX_TOKENS = 512
JUDGE_SYSTEM = (
    "You grade an AI assistant's answer against a rubric. Reply with one JSON object and nothing else: "
    '{"score": <a number from 0 to 1>, "reason": "<one sentence>"}.'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Judged:
    score: Score
    model: str
    input_tokens: int
    output_tokens: int


async def judge(
    registry: ProviderRegistry, tenant_id: str, check: Mapping[str, Any], *, question: str, answer: str
) -> Judged:
    """Ask the check's model; an unreadable verdict or a provider error scores 0 with the reason."""
    model = dict(check["model"])
    prompt = f"Rubric:\n{check['rubric']}\n\nQuestion:\n{question}\n\nAnswer:\n{answer}"
    request = ModelRequest(
        model=model, system=JUDGE_SYSTEM, messages=[ChatMessage(role="user", content=prompt)], tools=[],
        max_tokens=JUDGE_MAX_TOKENS,
    )  # fmt: skip
    response: ModelResponse | None = None
    try:
        async for event in registry.for_turn(tenant_id, model).stream(request):
            if isinstance(event, ModelResponse):
                response = event
    except ProviderError as exc:
        return Judged(Score("judge", 0.0, f"the judge model failed: {exc.code}"), str(model["name"]), 0, 0)
    if response is None:
        return Judged(Score("judge", 0.0, "the judge model gave no answer"), str(model["name"]), 0, 0)
    return Judged(verdict(response.text), str(model["name"]), response.input_tokens, response.output_tokens)


def verdict(text: str) -> Score:
    """The judge's `{"score", "reason"}`, found in its reply even with prose around it."""
    found = _OBJECT.search(text)
    try:
        parsed = orjson.loads(found.group(0)) if found else None
    except orjson.JSONDecodeError:
        parsed = None
    raw = parsed.get("score") if isinstance(parsed, dict) else None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return Score("judge", 0.0, "the judge's reply held no score")
    reason = parsed.get("reason") if isinstance(parsed, dict) else None
    return Score("judge", min(1.0, max(0.0, float(raw))), str(reason or "no reason given")[:1000])
