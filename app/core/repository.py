"""Repository base: every statement starts from the caller's tenant, so none can forget it."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

ModelT = TypeVar("ModelT")


class TenantRepository(Generic[ModelT]):
    model: type[ModelT]

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def readable(self) -> Select[tuple[ModelT]]:
        stmt: Select[tuple[ModelT]] = select(self.model)  # type: ignore[assignment]
        return stmt.where(self.model.tenant_id == self.tenant_id)  # type: ignore[attr-defined]

    async def first(self, stmt: Select[tuple[ModelT]]) -> ModelT | None:
        row: ModelT | None = (await self.session.execute(stmt.limit(1))).scalars().first()  # type: ignore[assignment]
        return row

    async def all(self, stmt: Select[Any]) -> list[Any]:
        return list((await self.session.execute(stmt)).scalars().all())

    async def add(self, obj: ModelT) -> ModelT:
        self.session.add(obj)
        await self.session.flush()
        return obj
