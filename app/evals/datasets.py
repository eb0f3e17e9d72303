"""Datasets of eval items: create, append (JSON or JSONL), build from recorded sessions, page, delete."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.core.json_guard import decode_json, find_violation
from app.core.pagination import page_of
from app.core.sql import INTEGRITY_ERRORS
from app.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.evals import schemas
from app.evals.repository import (
    ENDED,
    CancelledRun,
    DatasetItemRepository,
    DatasetRepository,
    EvalRunRepository,
    RecordedTurns,
)
from app.models import Dataset, DatasetItem
from app.models.base import utcnow
from app.sessions.repository import SessionRepository

PAGE = 100


class DatasetService:
    def __init__(self, db: AsyncSession, principal: Principal) -> None:
        self.db = db
        self.principal = principal
        self.datasets = DatasetRepository(db, principal.tenant_id)
        self.items = DatasetItemRepository(db, principal.tenant_id)

    async def create(self, body: schemas.DatasetCreate) -> schemas.Dataset:
        if await self.datasets.by_name(body.name) is not None:
            raise Conflict(f"A dataset named {body.name!r} exists already")
        row = Dataset(
            id=uuid.uuid4(), tenant_id=self.principal.tenant_id, owner_sub=self.principal.sub,
            name=body.name, description=body.description, item_count=0,
        )  # fmt: skip
        try:
            await self.datasets.add(row)
        except INTEGRITY_ERRORS as exc:
            raise Conflict(f"A dataset named {body.name!r} exists already") from exc
        if body.items:
            await self._append(row, body.items)
        return view(row)

    async def listing(self, *, limit: int, cursor: str | None, name: str | None) -> schemas.DatasetPage:
        rows = await self.datasets.page(limit=limit, cursor=cursor, name=name)
        items, next_cursor = page_of(rows, limit)
        return schemas.DatasetPage(items=[view(d) for d in items], next_cursor=next_cursor)

    async def get(self, dataset_id: uuid.UUID) -> schemas.Dataset:
        return view(await self.load(dataset_id))

    async def find(self, name_or_id: str) -> Dataset:
        """By id, or by name (the CLI's `--dataset`)."""
        try:
            return await self.load(uuid.UUID(name_or_id))
        except ValueError:
            row = await self.datasets.by_name(name_or_id)
        if row is None:
            raise NotFound(f"Dataset {name_or_id} not found")
        return row

    async def delete(self, dataset_id: uuid.UUID) -> list[CancelledRun]:
        """Delete the dataset, its items and the runs on it (ON DELETE CASCADE); the runs still going,
        cancelled, for the caller to stop their turns.

        The runs are locked before the cascade reaches the items, the order the runner's result inserts
        lock them in (EvalStore.result_for), so a delete during a run waits for an insert, or the insert
        for it, instead of deadlocking with it."""
        row = await self._writable(dataset_id)
        runs = EvalRunRepository(self.db, self.principal.tenant_id)
        cancelled = [
            await runs.cancel(run) for run in await runs.lock_of_dataset(dataset_id) if run.status not in ENDED
        ]
        await self.db.delete(row)
        await self.db.flush()
        return cancelled

    async def append(self, dataset_id: uuid.UUID, items: Sequence[schemas.ItemIn]) -> schemas.ItemsAdded:
        row = await self._writable(dataset_id)
        added = await self._append(row, items)
        return schemas.ItemsAdded(added=len(added), item_count=row.item_count, items=[item_view(i) for i in added])

    async def append_jsonl(self, dataset_id: uuid.UUID, body: bytes) -> schemas.ItemsAdded:
        return await self.append(dataset_id, parse_jsonl(body))

    async def from_sessions(self, dataset_id: uuid.UUID, body: schemas.FromSessions) -> schemas.ItemsAdded:
        """Each completed turn of the sessions becomes an item: its input, its answer as the reference,
        and the tool calls it ran with their ledgered results (what a `recorded` run answers from)."""
        row = await self._writable(dataset_id)
        sessions = SessionRepository(self.db, self.principal.tenant_id)
        recorded = RecordedTurns(self.db, self.principal.tenant_id)
        items: list[schemas.ItemIn] = []
        for session_id in dict.fromkeys(body.session_ids):
            if await sessions.get(self.principal, session_id) is None:
                raise InvalidInput(f"Session {session_id} not found", field="body.session_ids")
            turns = await recorded.completed_turns(session_id)
            calls = await recorded.tool_calls([t.id for t in turns])
            for turn in turns:
                tools = [
                    schemas.RecordedTool(
                        name=c.tool_name, arguments=c.arguments, result=c.result or "", is_error=c.is_error
                    )
                    for c in calls
                    if c.turn_id == turn.id
                ]
                items.append(
                    schemas.ItemIn(
                        input=turn.input,
                        expected=schemas.Expected(reference=turn.final_output or ""),
                        recorded_tools=tools,
                        metadata={"session_id": str(session_id), "turn_id": str(turn.id)},
                    )
                )
        added = await self._append(row, items)
        return schemas.ItemsAdded(added=len(added), item_count=row.item_count, items=[item_view(i) for i in added])

    async def page(self, dataset_id: uuid.UUID, *, limit: int, cursor: str | None) -> schemas.ItemPage:
        await self.load(dataset_id)
        after = position_cursor(cursor)
        rows = await self.items.page(dataset_id, after=after, limit=limit)
        more = len(rows) > limit
        rows = rows[:limit]
        return schemas.ItemPage(
            items=[item_view(i) for i in rows], next_cursor=str(rows[-1].position) if more and rows else None
        )

    async def load(self, dataset_id: uuid.UUID) -> Dataset:
        row = await self.datasets.get(dataset_id)
        if row is None:
            raise NotFound(f"Dataset {dataset_id} not found")
        return row

    async def _writable(self, dataset_id: uuid.UUID) -> Dataset:
        row = await self.datasets.get(dataset_id, for_update=True)
        if row is None:
            raise NotFound(f"Dataset {dataset_id} not found")
        if row.owner_sub != self.principal.sub and not self.principal.is_admin:
            raise Forbidden("Only the dataset's owner or an admin changes it")
        return row

    async def _append(self, dataset: Dataset, items: Sequence[schemas.ItemIn]) -> list[DatasetItem]:
        """Items take the next positions; the dataset row is locked, so two appends never share one."""
        count = await self.datasets.count_items(dataset.id)
        if count + len(items) > schemas.MAX_ITEMS:
            raise InvalidInput(
                f"A dataset holds at most {schemas.MAX_ITEMS} items ({count} now, {len(items)} more asked)",
                field="body.items",
            )
        rows = [
            DatasetItem(
                id=uuid.uuid4(), tenant_id=self.principal.tenant_id, dataset_id=dataset.id, position=count + i + 1,
                input=item.input, expected=item.expected.model_dump(mode="json", by_alias=True),
                recorded_tools=[t.model_dump(mode="json") for t in item.recorded_tools], meta=item.metadata,
            )
            for i, item in enumerate(items)
        ]  # fmt: skip
        await self.items.add_many(rows)
        dataset.item_count = count + len(rows)
        dataset.updated_at = utcnow()
        await self.db.flush()
        return rows


def parse_jsonl(body: bytes) -> list[schemas.ItemIn]:
    """One item per non-empty line; an error names its line."""
    items = []
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            document = decode_json(line)
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(f"line {number} is not JSON the service takes", field=f"body.line {number}") from exc
        violation = find_violation(document)
        if violation is not None:
            where = ".".join(str(p) for p in violation.loc) or "(line)"
            raise InvalidInput(f"line {number}: {where}: {violation.msg}", field=f"body.line {number}")
        try:
            items.append(schemas.ItemIn.model_validate(document))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InvalidInput(f"line {number}: {where}: {first['msg']}", field=f"body.line {number}") from exc
        if len(items) > schemas.MAX_ITEMS:
            raise InvalidInput(f"at most {schemas.MAX_ITEMS} items", field="body")
    if not items:
        raise InvalidInput("no items in the body", field="body")
    return items


def position_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise InvalidInput("Invalid cursor", field="query.cursor")
    return int(cursor)


def view(row: Dataset) -> schemas.Dataset:
    return schemas.Dataset(
        id=row.id, name=row.name, description=row.description, item_count=row.item_count, owner=row.owner_sub,
        created_at=row.created_at, updated_at=row.updated_at,
    )  # fmt: skip


def item_view(row: DatasetItem) -> schemas.Item:
    return schemas.Item(
        id=row.id, position=row.position, input=row.input, expected=row.expected,
        recorded_tools=row.recorded_tools, metadata=row.meta, created_at=row.created_at,
    )  # fmt: skip
