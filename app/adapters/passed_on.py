"""What a protocol adapter has passed on of a turn's events, so that `turn.resumed` can take some back.

Each record is a turn event (seq, type) with the protocol id it fed: the text message of a delta or
of a whole reply, the tool call of a request, the result of a completion. At `turn.resumed` the
drop rule (app/core/drop_rule.py) says which events are withdrawn; the adapter withdraws their
protocol ids in its protocol's words.
"""

from __future__ import annotations

from typing import Any

from app.core.drop_rule import withdrawn


class PassedOn:
    def __init__(self) -> None:
        self._records: list[dict[str, Any]] = []

    def add(self, event: dict[str, Any], ref: str) -> None:
        self._records.append({"seq": event["seq"], "type": event["type"], "ref": ref})

    def has(self, kind: str, ref: str) -> bool:
        """Whether an event of `kind` that fed `ref` was passed on (and not withdrawn)."""
        return any(r["type"] == kind and r["ref"] == ref for r in self._records)

    def withdraw(self, resumed: dict[str, Any]) -> list[dict[str, Any]]:
        """Forgets the records `resumed` withdraws; returns them, in order."""
        gone = withdrawn(self._records, resumed)
        taken = [r for r in self._records if r["seq"] in gone]
        self._records = [r for r in self._records if r["seq"] not in gone]
        return taken


def refs(records: list[dict[str, Any]], *kinds: str) -> list[str]:
    """The distinct protocol ids of the records of these kinds, in order."""
    return list(dict.fromkeys(r["ref"] for r in records if r["type"] in kinds))
