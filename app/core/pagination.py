"""Keyset (cursor) pagination over (created_at, id), newest first."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel
from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from app.errors import BadRequest

T = TypeVar("T")
MAX_LIMIT = 200


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = None


def encode_cursor(created_at: datetime, row_id: uuid.UUID) -> str:
    raw = orjson.dumps([created_at.isoformat(), str(row_id)])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _invalid_cursor() -> BadRequest:
    return BadRequest("Invalid cursor", errors=[{"loc": ["query", "cursor"], "msg": "invalid cursor"}])


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, row_id = orjson.loads(raw)
        at, last_id = datetime.fromisoformat(created), uuid.UUID(row_id)
    except (ValueError, TypeError, orjson.JSONDecodeError) as exc:
        raise _invalid_cursor() from exc
    # SQLite hands back naive UTC datetimes; PostgreSQL needs an aware value to compare with timestamptz.
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)), last_id


def paginate(
    stmt: Select[Any],
    *,
    created_at: InstrumentedAttribute[datetime],
    row_id: InstrumentedAttribute[uuid.UUID],
    limit: int,
    cursor: str | None,
) -> Select[Any]:
    """Order newest first and fetch one extra row to know whether a next page exists."""
    if cursor:
        at, last_id = decode_cursor(cursor)
        stmt = stmt.where(or_(created_at < at, and_(created_at == at, row_id < last_id)))
    return stmt.order_by(created_at.desc(), row_id.desc()).limit(limit + 1)


def page_of(rows: list[Any], limit: int) -> tuple[list[Any], str | None]:
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last = rows[-1]
    return rows, encode_cursor(last.created_at, last.id)
