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

    def owned(self, owner_sub: str | None) -> Select[tuple[ModelT]]:
        """Readable rows of one owner (`owner_sub` column), or of every owner when None."""
        stmt = self.readable()
        if owner_sub is None:
            return stmt
        return stmt.where(self.model.owner_sub == owner_sub)  # type: ignore[attr-defined]

    async def first(self, stmt: Select[tuple[ModelT]]) -> ModelT | None:
        row: ModelT | None = (await self.session.execute(stmt.limit(1))).scalars().first()  # type: ignore[assignment]
        return row

    async def all(self, stmt: Select[Any]) -> list[Any]:
        return list((await self.session.execute(stmt)).scalars().all())

    async def add(self, obj: ModelT) -> ModelT:
        self.session.add(obj)
        await self.session.flush()
        return obj
