from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select, update

from app.core.repository import TenantRepository
from app.models import Dataset, DatasetItem, PolicyDecision, ToolExecution, Turn


class DatasetRepository(TenantRepository[Dataset]):
    """Datasets are the tenant's: every member reads them; their owner or an admin changes them."""

    model = Dataset

    async def get(self, dataset_id: uuid.UUID, *, for_update: bool = False) -> Dataset | None:
        stmt = self.readable().where(Dataset.id == dataset_id)
        return await self.first(stmt.with_for_update() if for_update else stmt)

    async def by_name(self, name: str) -> Dataset | None:
        return await self.first(self.readable().where(Dataset.name == name))

    async def count_items(self, dataset_id: uuid.UUID) -> int:
        stmt = select(func.count()).where(DatasetItem.tenant_id == self.tenant_id, DatasetItem.dataset_id == dataset_id)
        return int((await self.session.execute(stmt)).scalar_one())

    async def set_count(self, dataset_id: uuid.UUID, count: int) -> None:
        await self.session.execute(
            update(Dataset)
            .where(Dataset.tenant_id == self.tenant_id, Dataset.id == dataset_id)
            .values(item_count=count)
        )


class DatasetItemRepository(TenantRepository[DatasetItem]):
    model = DatasetItem

    async def page(self, dataset_id: uuid.UUID, *, after: int, limit: int) -> list[DatasetItem]:
        stmt = self.readable().where(DatasetItem.dataset_id == dataset_id, DatasetItem.position > after)
        return await self.all(stmt.order_by(DatasetItem.position).limit(limit + 1))

    async def all_of(self, dataset_id: uuid.UUID) -> list[DatasetItem]:
        stmt = self.readable().where(DatasetItem.dataset_id == dataset_id)
        return await self.all(stmt.order_by(DatasetItem.position))

    async def add_many(self, rows: list[DatasetItem]) -> None:
        self.session.add_all(rows)
        await self.session.flush()


class RecordedTurns:
    """The ended turns of sessions, with their ledgered tool calls (what `items:from-sessions` reads)."""

    def __init__(self, session: Any, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def completed_turns(self, session_id: uuid.UUID) -> list[Turn]:
        stmt = (
            select(Turn)
            .where(Turn.tenant_id == self.tenant_id, Turn.session_id == session_id, Turn.status == "completed")
            .order_by(Turn.created_at, Turn.id)
        )
        return list((await self.session.execute(stmt)).scalars().all())

    async def tool_calls(self, turn_ids: list[uuid.UUID]) -> list[ToolExecution]:
        """Calls that ran to a result: a call the policy or a human denied never ran, so it records nothing."""
        if not turn_ids:
            return []
        denied = (
            select(PolicyDecision.id)
            .where(
                PolicyDecision.tenant_id == self.tenant_id,
                PolicyDecision.turn_id == ToolExecution.turn_id,
                PolicyDecision.tool_call_id == ToolExecution.tool_call_id,
                PolicyDecision.verdict == "deny",
            )
            .exists()
        )
        stmt = (
            select(ToolExecution)
            .where(
                ToolExecution.tenant_id == self.tenant_id,
                ToolExecution.turn_id.in_(turn_ids),
                ToolExecution.status == "completed",
                ~denied,
            )
            .order_by(ToolExecution.created_at, ToolExecution.id)
        )
        return list((await self.session.execute(stmt)).scalars().all())
