"""Which batches the turn writer may write without a transaction: only ones a single INSERT writes."""

from __future__ import annotations

import pytest

from app.turns.store import MESSAGES
from app.turns.stream import EVENTS, one_statement


@pytest.mark.parametrize(
    ("dialect", "table", "count", "expected"),
    [
        ("postgresql", EVENTS, 60, True),  # INSERT ... SELECT FROM unnest(...)
        ("postgresql", MESSAGES, 1, True),
        ("postgresql", MESSAGES, 2, False),  # executemany: one statement per row, needs BEGIN/COMMIT
        ("sqlite", EVENTS, 2, False),
        ("sqlite", EVENTS, 1, True),
    ],
)
def test_only_single_statement_batches_skip_the_transaction(
    dialect: str, table: object, count: int, expected: bool
) -> None:
    assert one_statement(dialect, table, count) is expected  # type: ignore[arg-type]
