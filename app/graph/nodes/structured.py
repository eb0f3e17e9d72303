"""A final answer under an output schema: kept with its parsed object, sent back once, or the turn fails."""

from __future__ import annotations

from typing import Any

from app.graph.state import TurnState
from app.providers.base import ChatMessage
from app.structured.answer import Accepted, Repair, judge_answer


def structured_answer(state: TurnState, text: str, schema: dict[str, Any]) -> dict[str, Any]:
    repairs = state.get("output_repairs", 0)
    verdict = judge_answer(text, schema, repaired=repairs > 0)
    if isinstance(verdict, Accepted):
        return {"final_output": text, "output": verdict.output}
    if isinstance(verdict, Repair):
        again = ChatMessage(role="user", content=verdict.prompt)
        return {
            "repairing": True,
            "output_repairs": repairs + 1,
            "new_messages": [*state.get("new_messages", []), again],
        }
    return {"status": "failed", "error": verdict.error, "final_output": None}
