"""OpenTelemetry traces, on only when an exporter is configured (DESIGN.md "Operations" → Traces).

The service keeps its own `TracerProvider` (not the process-global one), so tests can swap in an
in-memory exporter and several apps in one process do not fight over a global. While tracing is off,
`span()` hands back one shared no-op context manager: no span objects, no attribute dicts, nothing
but a module-level `None` check on the hot path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

INSTRUMENTATION = "agent-runtime"
_NOOP: contextlib.nullcontext[None] = contextlib.nullcontext()
_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def otlp_exporter(endpoint: str) -> SpanExporter:
    """OTLP/HTTP to `{endpoint}/v1/traces`; the `otlp` extra provides it."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed: "
            "pip install 'agent-runtime[otlp]'"
        ) from exc
    return OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")


def configure_tracing(
    *, service_name: str, endpoint: str | None = None, exporter: SpanExporter | None = None
) -> TracerProvider | None:
    """Turn tracing on (an exporter given, or an OTLP endpoint) or off (neither). Returns the provider."""
    global _tracer, _provider
    shutdown_tracing()
    if exporter is None and not endpoint:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        assert endpoint is not None
        provider.add_span_processor(BatchSpanProcessor(otlp_exporter(endpoint)))
    _provider = provider
    _tracer = provider.get_tracer(INSTRUMENTATION)
    return provider


def shutdown_tracing() -> None:
    """Flush and stop the exporter; tracing is off afterwards."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _tracer, _provider = None, None


def enabled() -> bool:
    return _tracer is not None


def span(
    name: str,
    attributes: Mapping[str, AttributeValue] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: Context | None = None,
) -> contextlib.AbstractContextManager[Span | None]:
    """A child of the current span (or of `parent`), current while the block runs; a shared no-op when off."""
    if _tracer is None:
        return _NOOP
    return _tracer.start_as_current_span(name, context=parent, attributes=attributes, kind=kind)


def set_error(current: Span | None, error_type: str, message: str = "") -> None:
    """Mark a span failed the semantic-conventions way: `error.type` and an ERROR status."""
    if current is None:
        return
    current.set_attribute("error.type", error_type)
    current.set_status(Status(StatusCode.ERROR, message or error_type))


def current_span() -> Span | None:
    return trace.get_current_span() if _tracer is not None else None
