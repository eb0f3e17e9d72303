"""Database client spans: the ORM's statements (SQLAlchemy events) and the hot path's (app/core/sql.py).

Attributes follow the semantic conventions: `db.system.name`, `db.operation.name`, and the statement
text with its placeholders (`db.query.text`) — never the bound values.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Span, SpanKind, get_current_span
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core import tracing

_SPAN = "agent_runtime_span"
MAX_QUERY_TEXT = 2000


def operation_of(statement: str) -> str:
    head = statement.lstrip().split(None, 1)
    return head[0].upper() if head else "SQL"


def span_attributes(system: str, statement: str) -> dict[str, str]:
    return {
        "db.system.name": system,
        "db.operation.name": operation_of(statement),
        "db.query.text": statement[:MAX_QUERY_TEXT],
    }


def statement_span(system: str, statement: str) -> Any:
    """The span of one statement inside a trace (a request's, a turn's); a shared no-op while tracing is
    off or outside any trace, so background polls (schedules, webhooks, sweeps) start no traces."""
    if not tracing.enabled() or not get_current_span().get_span_context().is_valid:
        return tracing.span("")
    return tracing.span(operation_of(statement), span_attributes(system, statement), kind=SpanKind.CLIENT)


def instrument_engine(engine: AsyncEngine) -> None:
    """Listen to the engine's statements; call only while tracing is on (a listener costs on every statement)."""
    target = engine.sync_engine
    system = "sqlite" if engine.dialect.name == "sqlite" else engine.dialect.name

    def before(_conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool) -> None:
        manager = statement_span(system, statement)
        span: Span | None = manager.__enter__()
        if context is not None:
            setattr(context, _SPAN, (manager, span))

    def after(_conn: Any, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool) -> None:
        held = getattr(context, _SPAN, None)
        if held is not None:
            delattr(context, _SPAN)
            held[0].__exit__(None, None, None)

    def failed(exception_context: Any) -> None:
        context = exception_context.execution_context
        held = getattr(context, _SPAN, None) if context is not None else None
        if held is not None:
            delattr(context, _SPAN)
            error = exception_context.original_exception
            tracing.set_error(held[1], type(error).__name__)
            held[0].__exit__(type(error), error, None)

    event.listen(target, "before_cursor_execute", before)
    event.listen(target, "after_cursor_execute", after)
    event.listen(target, "handle_error", failed)
