"""bench/pgwire.py's reading of PostgreSQL's replies, and bench/dbstats.py's per-turn figures: bytes in, counts out."""

from __future__ import annotations

import struct
from collections import deque

from bench.dbstats import per_second, per_turn
from bench.pgwire import ReplyReader, RequestReader, WireCounts


def message(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", 4 + len(body)) + body


def complete(tag: str) -> bytes:
    return message(b"C", tag.encode() + b"\0")


def ready(status: bytes) -> bytes:
    return message(b"Z", status)


def read(*messages: bytes, split: int | None = None) -> WireCounts:
    counts = WireCounts()
    reader = ReplyReader(counts)
    data = b"".join(messages)
    if split is None:
        reader.feed(data)
    else:
        reader.feed(data[:split])
        reader.feed(data[split:])
    return counts


def test_an_implicit_transaction_is_one_statement_and_one_commit() -> None:
    counts = read(message(b"2"), message(b"D", b"\0\0"), complete("INSERT 0 1"), ready(b"I"))
    assert (counts.statements, counts.commits) == (1, 1)


def test_a_row_limited_execute_counts_as_a_statement() -> None:
    assert read(message(b"s"), ready(b"I")).snapshot() == {"statements": 1, "commits": 1, "writes": 0, "rollbacks": 0}


def test_an_explicit_transaction_commits_once_and_begin_and_commit_are_not_statements() -> None:
    counts = read(
        complete("BEGIN"), ready(b"T"), complete("SELECT 1"), ready(b"T"), complete("UPDATE 2"), ready(b"T"),
        complete("COMMIT"), ready(b"I"),
    )  # fmt: skip
    assert (counts.statements, counts.commits) == (2, 1)


def test_errors_and_rollbacks_are_not_commits() -> None:
    counts = read(
        complete("BEGIN"), ready(b"T"), message(b"E", b"Sfail\0\0"), ready(b"E"), complete("ROLLBACK"), ready(b"I")
    )
    assert (counts.statements, counts.commits, counts.rollbacks) == (0, 0, 1)


def test_a_sync_with_nothing_executed_is_no_commit_and_messages_may_arrive_split() -> None:
    counts = read(message(b"1"), message(b"t", b"\0\0"), ready(b"I"), complete("SELECT 3"), ready(b"I"), split=7)
    assert (counts.statements, counts.commits) == (1, 1)


def _parse(name: bytes, sql: bytes) -> bytes:
    return message(b"P", name + b"\0" + sql + b"\0\0\0")


def _bind(portal: bytes, statement: bytes) -> bytes:
    return message(b"B", portal + b"\0" + statement + b"\0\0\0\0\0\0\0")


def _execute(portal: bytes) -> bytes:
    return message(b"E", portal + b"\0\0\0\0\0")


def test_a_commit_writes_when_its_transaction_ran_a_statement_that_changes_data() -> None:
    """Prepared once, executed by name later (asyncpg's cache); a data-modifying CTE in a SELECT writes too."""
    executions: deque[bool] = deque()
    requests, counts = RequestReader(executions), WireCounts()
    replies = ReplyReader(counts, executions)
    requests.feed(_parse(b"s1", b"WITH g AS (INSERT INTO t SELECT 1 RETURNING id) SELECT count(*) FROM g"))
    requests.feed(_parse(b"s2", b"SELECT updated_at FROM t WHERE id = $1"))
    for statement in (b"s1", b"s2", b"s2"):
        requests.feed(_bind(b"", statement) + _execute(b"") + message(b"S"))
        replies.feed(message(b"2") + complete("SELECT 1") + ready(b"I"))
    assert (counts.statements, counts.commits, counts.writes) == (3, 3, 1)


def test_a_simple_query_is_judged_by_its_text() -> None:
    executions: deque[bool] = deque()
    counts = WireCounts()
    RequestReader(executions).feed(message(b"Q", b"update turns set status = 'failed'\0"))
    ReplyReader(counts, executions).feed(complete("UPDATE 1") + ready(b"I"))
    assert (counts.commits, counts.writes) == (1, 1)


def test_per_turn_divides_the_changes_and_leaves_out_what_did_not_change() -> None:
    before = {"statements": 10, "commits": 4, "rollbacks": 0}
    after = {"statements": 120, "commits": 34, "rollbacks": 0}
    assert per_turn(before, after, 10) == {"commits": 3.0, "statements": 11.0}
    assert per_turn(before, after, 0) == {}


def test_background_work_at_its_idle_rate_is_taken_off_the_load() -> None:
    idle = per_second({"statements": 0, "commits": 0}, {"statements": 6, "commits": 6}, 3.0)
    assert idle == {"statements": 2.0, "commits": 2.0}
    counted = per_turn(
        {"statements": 6, "commits": 6}, {"statements": 80, "commits": 16}, 10, background=idle, seconds=2.0
    )
    assert counted == {"statements": 7.0, "commits": 0.6}
    assert per_turn({"commits": 0}, {"commits": 1}, 10, background={"commits": 5.0}, seconds=1.0) == {}
