"""A turn's write as one statement on PostgreSQL: every staged row and the settle, atomic without a transaction.

One write of the TurnWriter (a flush, or the turn's last write) carries rows of several tables
(events, messages, usage, receipts) and, at the end, the UPDATE that settles the turn plus the
`turn.ended` event that may only be stored if the turn did settle. As a transaction that is BEGIN,
one statement per table, the UPDATE and COMMIT: five to seven round trips. PostgreSQL runs
data-modifying CTEs of a single statement atomically, so here it is one: one `INSERT … SELECT FROM
unnest(…) WITH ORDINALITY` per table (rows keep their staged order, hence message ids keep
conversation order), the settle as an `UPDATE … RETURNING`, the closing event inserted only
`WHERE EXISTS` a settled row, the `pg_notify` for followers on other replicas, and, when a stream
needs more event ids, the `UPDATE` that raises its turn's `seq_ceiling` (`CEILINGS`, see
app/runtime/stream.py): the reservation costs no round trip of its own.

The same statement fences each turn's rows by its run (`Fence`): a `fence` CTE reads the turns of
the write that still name the writing runner, `FOR SHARE`, and every row of a turn is inserted only
if its turn is in it. The share lock orders the write against a claim by another replica (an
`UPDATE` of the same row): a claim that committed first is seen (the row is re-read and drops out),
a later one waits for this write to commit and then reads what it stored. So a replica that lost a
turn stores none of its late rows, and learns so from the write (`Written.taken`). Every `UPDATE` of
`turns` in the statement (the settle, the ceilings) names the fence in its condition, so the lock is
taken before the row changes (a row this statement already changed would drop out of the lock).
Quota settlements are not fenced: the tokens were spent. SQLite serves one process, whose runs no
other runner takes while it lives: its writes are not fenced.

SQLite has no data-modifying CTEs; it writes the same rows in a transaction (`write_in_transaction`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    JSON,
    Integer,
    String,
    Table,
    Text,
    Uuid,
    all_,
    any_,
    bindparam,
    case,
    cast,
    exists,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import Insert, Update

from app.core.db import json_text
from app.core.sql import Query, Sql, bare, insert_rows
from app.models import ToolExecution, Turn, TurnEvent
from app.runtime.store.notify import CHANNEL
from app.runtime.store.outbox import OUTBOX_EVENT_COLUMNS, enqueue_in_transaction, outbox_inserts
from app.runtime.store.quota import QUOTA_LEDGER, settle_ctes, settle_each, settle_params
from app.runtime.store.status import settle_query, settle_turn_update

StagedRow = tuple[Table, dict[str, Any]]
Shape = tuple[Table, tuple[str, ...]]
TURNS: Table = Turn.__table__  # type: ignore[assignment]
QUOTA_PREFIX = "q_"
EVENTS: Table = TurnEvent.__table__  # type: ignore[assignment]
CEILINGS = TURNS
"""A staged row on `turns` raises a running turn's `seq_ceiling` (`ceiling_row`); it inserts nothing."""
CEILING_PREFIX = "c_"
CEILING_COLUMNS = ("turn_id", "tenant_id", "runner_id", "seq_ceiling")
LEDGER: Table = ToolExecution.__table__  # type: ignore[assignment]
KEEP_FIRST: dict[Table, str] = {LEDGER: "idempotency_key"}
"""Tables whose staged row is skipped when a row with its key is already stored: a tool call's
`dispatched` ledger row rides in the write that stores its request, and a re-send keeps the first row."""


def ceiling_row(turn_id: uuid.UUID, tenant_id: str, runner_id: uuid.UUID | None, ceiling: int) -> dict[str, Any]:
    """Raise the turn's ceiling to `ceiling` if its run is still this runner's (None: not fenced)."""
    return {"turn_id": turn_id, "tenant_id": tenant_id, "runner_id": runner_id, "seq_ceiling": ceiling}


@dataclass(frozen=True, slots=True)
class Fence:
    """A run's hold on its turn: the turn's rows are stored only while the turn names `runner_id`."""

    turn_id: uuid.UUID
    runner_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class Written:
    settled: bool
    """The write's settle moved the turn out of `running` (True too when it had no settle)."""
    raised: frozenset[uuid.UUID] = frozenset()
    """The turns whose `seq_ceiling` this write raised."""
    taken: frozenset[uuid.UUID] = frozenset()
    """Fenced turns another runner runs now: none of their rows were stored."""


@dataclass(frozen=True, slots=True)
class Settle:
    """Move a turn out of `running` with `values`, unless it already left it (a cancel elsewhere) or
    another runner took it over (`runner_id`, the fence; None: not fenced)."""

    turn_id: uuid.UUID
    values: Mapping[str, Any]
    runner_id: uuid.UUID | None = None

    def params(self) -> dict[str, Any]:
        values = {f"s_{c}": v for c, v in self.values.items()}
        return {"settle_turn_id": self.turn_id, "settle_runner": self.runner_id, **values}


def _split(rows: Sequence[StagedRow]) -> tuple[list[StagedRow], list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows to insert, the quota settlements among them, and the ceiling raises."""
    if not any(table is QUOTA_LEDGER or table is CEILINGS for table, _ in rows):
        return list(rows), [], []
    settlements = [row for table, row in rows if table is QUOTA_LEDGER]
    ceilings = [row for table, row in rows if table is CEILINGS]
    inserts = [staged for staged in rows if staged[0] is not QUOTA_LEDGER and staged[0] is not CEILINGS]
    return inserts, settlements, ceilings


def _raise_ceiling(turns: Any, turn_id: Any, tenant_id: Any, runner_id: Any, ceiling: Any, fence: Any = None) -> Update:
    """Never lowers a ceiling, and never raises one for a run another runner took over (the fence)."""
    owned = turns.c.runner_id == runner_id if fence is None else turns.c.id.in_(select(fence.c.id))
    return (
        update(turns)
        .where(
            turns.c.id == turn_id,
            turns.c.tenant_id == tenant_id,
            turns.c.status == "running",
            or_(runner_id.is_(None), owned),
        )
        .values(seq_ceiling=case((turns.c.seq_ceiling > ceiling, turns.c.seq_ceiling), else_=ceiling))
        .returning(turns.c.id)
    )


def _prefixed(row: Mapping[str, Any]) -> dict[str, Any]:
    return {f"in_{c}": v for c, v in row.items()}


def _ceilings_update(fence: Any) -> Update:
    """PostgreSQL: raise the ceilings of every turn in the write (one row each, from arrays)."""
    kinds: dict[str, Any] = {"turn_id": Uuid(), "tenant_id": String(), "runner_id": Uuid(), "seq_ceiling": Integer()}
    arrays: list[Any] = [bindparam(f"{CEILING_PREFIX}{c}", type_=ARRAY(kinds[c])) for c in CEILING_COLUMNS]
    rows = func.unnest(*arrays).table_valued(*CEILING_COLUMNS).render_derived()
    return _raise_ceiling(bare(TURNS), rows.c.turn_id, rows.c.tenant_id, rows.c.runner_id, rows.c.seq_ceiling, fence)


_FENCE_TURNS = bindparam("fence_turns", type_=ARRAY(Uuid()))


def _fence_cte() -> Any:
    """The fenced turns of the write that still name their runner, share-locked (see the module).

    `id = ANY(…)` keeps the lookup on the primary key whatever the plan (a join to the `unnest` of
    the pairs alone was planned as a scan of `turns` on a small table)."""
    turns = bare(TURNS)
    runners = bindparam("fence_runners", type_=ARRAY(Uuid()))
    pairs = func.unnest(_FENCE_TURNS, runners).table_valued("turn_id", "runner_id").render_derived()
    return (
        select(turns.c.id)
        .where(
            turns.c.id == any_(_FENCE_TURNS),
            tuple_(turns.c.id, turns.c.runner_id).in_(select(pairs.c.turn_id, pairs.c.runner_id)),
        )
        .with_for_update(read=True, of=turns)
        .cte("fence")
    )


def _taken(fence: Any) -> Any:
    """The fenced turns of the write that are not in `fence`: another runner runs them."""
    asked = func.unnest(_FENCE_TURNS).table_valued("turn_id").render_derived()
    return select(func.array_agg(asked.c.turn_id)).where(asked.c.turn_id.not_in(select(fence.c.id))).scalar_subquery()


def fence_params(fences: Sequence[Fence]) -> dict[str, Any]:
    return {"fence_turns": [f.turn_id for f in fences], "fence_runners": [f.runner_id for f in fences]}


CEILING_ONE = Query(
    _raise_ceiling(
        bare(TURNS),
        bindparam("in_turn_id", type_=Uuid()),
        bindparam("in_tenant_id", type_=String()),
        bindparam("in_runner_id", type_=Uuid()),
        bindparam("in_seq_ceiling", type_=Integer()),
    )
)
"""SQLite: one ceiling (parameters `in_*`: SQLAlchemy reserves column names for SET values)."""


def grouped(rows: Sequence[StagedRow]) -> dict[Shape, list[dict[str, Any]]]:
    """Rows by table and column set, each group in staged order."""
    groups: dict[Shape, list[dict[str, Any]]] = {}
    for table, row in rows:
        groups.setdefault((table, tuple(row)), []).append(row)
    return groups


@lru_cache(maxsize=32)
def json_columns(table: Table) -> frozenset[str]:
    """JSON columns travel in `unnest` as text (asyncpg would read a list value as an array dimension)."""
    return frozenset(c.name for c in table.columns if isinstance(c.type, JSON))


def _column_array(table: Table, column: str, rows: list[dict[str, Any]]) -> list[Any]:
    if column in json_columns(table):
        return [None if row[column] is None else json_text(row[column]) for row in rows]
    return [row[column] for row in rows]


def _unnest_insert(table: Table, columns: tuple[str, ...], prefix: str, fence: Any = None) -> Insert:
    """The rows of one shape, in staged order; with `fence`, a row of a fenced turn only if its run still holds it."""
    target, as_text = bare(table), json_columns(table)
    arrays = [bindparam(f"{prefix}{c}", type_=ARRAY(Text() if c in as_text else target.c[c].type)) for c in columns]
    rows = func.unnest(*arrays).table_valued(*columns, with_ordinality="ordinality").render_derived()
    values = [cast(rows.c[c], target.c[c].type) if c in as_text else rows.c[c] for c in columns]
    kept = select(*values).order_by(rows.c.ordinality)
    if fence is not None and "turn_id" in columns:
        turn_id = rows.c.turn_id
        kept = kept.where(or_(turn_id != all_(_FENCE_TURNS), turn_id.in_(select(fence.c.id))))
    if table in KEEP_FIRST:
        return (
            pg_insert(target)
            .from_select(list(columns), kept)
            .on_conflict_do_nothing(index_elements=[KEEP_FIRST[table]])
        )
    return insert(target).from_select(list(columns), kept)


@lru_cache(maxsize=8)
def _keep_first_query(table: Table, columns: tuple[str, ...]) -> Query:
    """SQLite: insert a row unless its key is already stored."""
    statement = sqlite_insert(bare(table)).values({c: bindparam(c) for c in columns})
    return Query(statement.on_conflict_do_nothing(index_elements=[KEEP_FIRST[table]]))


async def _insert_group(sql: Sql, table: Table, rows: list[dict[str, Any]]) -> None:
    if table not in KEEP_FIRST:
        await insert_rows(sql, table, rows)
        return
    for row in rows:
        await sql.execute(_keep_first_query(table, tuple(row)), row)


def _with_outbox(events: Insert, name: str) -> list[Any]:
    """The events' INSERT returning what it stored, and the deliveries of those events (webhooks, A2A push)."""
    stored = events.returning(*(events.table.c[c] for c in OUTBOX_EVENT_COLUMNS)).cte(name)  # type: ignore[attr-defined]
    return [stored, *(insert.cte(f"{name}_outbox{i}") for i, insert in enumerate(outbox_inserts(stored)))]


@lru_cache(maxsize=64)
def write_query(
    shapes: tuple[Shape, ...],
    settle_columns: tuple[str, ...] | None,
    final: Shape | None,
    notify: bool,
    quota: bool = False,
    ceilings: bool = False,
    fenced: bool = False,
) -> Query:
    """The statement for one write of this shape; it returns how many turns it settled (0 or 1),
    the ids of the turns whose ceiling it raised, and (`fenced`) those another runner took.

    With `notify`, it also tells followers on other replicas which turns have new events (one NOTIFY
    per turn, sent at commit; see app/runtime/store/notify.py). A write may carry rows of many turns (the
    shared flush of app/runtime/stream.py), but at most one settle.
    """
    fence = _fence_cte() if fenced else None
    ctes: list[Any] = [] if fence is None else [fence]
    for i, (table, columns) in enumerate(shapes):
        rows = _unnest_insert(table, columns, f"g{i}_", fence)
        ctes += _with_outbox(rows, f"g{i}") if table is EVENTS else [rows.cte(f"g{i}")]
    if quota:
        ctes += settle_ctes(QUOTA_PREFIX)
    raised_ids: Any = null()
    if ceilings:
        raised = _ceilings_update(fence).cte("raised")
        ctes.append(raised)
        raised_ids = select(func.array_agg(raised.c.id)).scalar_subquery()
    settled_count: Any = literal(1)
    if settle_columns is not None:
        settled = settle_turn_update(settle_columns, fence).cte("settled")
        if final is not None:
            table, columns = final
            target = bare(table)
            values = [bindparam(f"f_{c}", type_=target.c[c].type) for c in columns]
            only_if_settled = select(*values).where(exists(select(settled)))
            final_insert = insert(target).from_select(list(columns), only_if_settled)
            ctes += _with_outbox(final_insert, "final") if table is EVENTS else [final_insert.cte("final")]
        settled_count = select(func.count()).select_from(settled).scalar_subquery()
    taken: Any = null() if fence is None else _taken(fence)
    outcome = [settled_count.label("settled"), raised_ids.label("raised"), taken.label("taken")]
    if not notify:
        return Query(select(*outcome).add_cte(*ctes))
    turn_ids = func.unnest(bindparam("notify_turn_ids", type_=ARRAY(Text()))).table_valued("turn_id").render_derived()
    notified = select(func.count(func.pg_notify(CHANNEL, turn_ids.c.turn_id))).scalar_subquery()
    return Query(select(*outcome, notified).add_cte(*ctes))


async def write_in_one_statement(
    sql: Sql, rows: Sequence[StagedRow], settle: Settle | None, final: StagedRow | None, fences: Sequence[Fence] = ()
) -> Written:
    """PostgreSQL: write `rows`, settle, and `final` if it settled; the rows of `fences`' turns only
    while their runs hold them."""
    rows, settlements, ceilings = _split(rows)
    groups = grouped(rows)
    params: dict[str, Any] = settle_params(QUOTA_PREFIX, settlements) if settlements else {}
    if fences:
        params.update(fence_params(fences))
    if ceilings:
        params.update({f"{CEILING_PREFIX}{c}": [row[c] for row in ceilings] for c in CEILING_COLUMNS})
    events = [row for table, row in rows if table is EVENTS] + ([final[1]] if final is not None else [])
    if events:
        params["notify_turn_ids"] = list(dict.fromkeys(str(row["turn_id"]) for row in events))
    for i, ((table, columns), batch) in enumerate(groups.items()):
        params.update({f"g{i}_{c}": _column_array(table, c, batch) for c in columns})
    settle_columns = final_shape = None
    if settle is not None:
        settle_columns = tuple(settle.values)
        params.update(settle.params())
        if final is not None:
            final_shape = (final[0], tuple(final[1]))
            params.update({f"f_{c}": v for c, v in final[1].items()})
    query = write_query(
        tuple(groups), settle_columns, final_shape, bool(events), bool(settlements), bool(ceilings), bool(fences)
    )
    row = await sql.fetchrow(query, params)
    assert row is not None
    settled = settle is None or bool(row["settled"])
    return Written(settled, frozenset(row["raised"] or ()), frozenset(row["taken"] or ()))


async def write_in_transaction(
    sql: Sql, rows: Sequence[StagedRow], settle: Settle | None, final: StagedRow | None
) -> Written:
    """Any backend: the same write as a transaction."""
    rows, settlements, ceilings = _split(rows)
    async with sql.transaction() as tx:
        settled = settle is None or await tx.fetchrow(settle_query(tuple(settle.values)), settle.params()) is not None
        await settle_each(tx, settlements)
        raised = frozenset(
            [row["turn_id"] for row in ceilings if await tx.fetchrow(CEILING_ONE, _prefixed(row)) is not None]
        )
        written = [*rows, final] if settled and final is not None else rows
        for (table, _), group in grouped(written).items():
            await _insert_group(tx, table, group)
        await enqueue_in_transaction(tx, [row for table, row in written if table is EVENTS])
    return Written(settled, raised)


async def write_rows(
    sql: Sql,
    rows: list[StagedRow],
    settle: Settle | None = None,
    final: StagedRow | None = None,
    fences: Sequence[Fence] = (),
) -> Written:
    """One write of staged rows (of one turn or many), with an optional settle; `fences`: the runs
    whose turns' rows are stored only while they hold them (PostgreSQL, see the module)."""
    if sql.dialect == "postgresql":
        return await write_in_one_statement(sql, rows, settle, final, fences)
    if settle is None and len(rows) == 1 and rows[0][0] not in (EVENTS, QUOTA_LEDGER, CEILINGS):
        await _insert_group(sql, rows[0][0], [rows[0][1]])
        return Written(True)
    return await write_in_transaction(sql, rows, settle, final)
