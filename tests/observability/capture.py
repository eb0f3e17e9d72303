"""Capture every log line the service writes, formatted exactly as its root handler formats them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from app.core.logs import formatter


class LineCapture(logging.Handler):
    def __init__(self, log_format: str = "json") -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(formatter(log_format))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]

    def text(self) -> str:
        return "\n".join(self.lines)


@contextmanager
def captured_logs(log_format: str = "json", level: int = logging.DEBUG) -> Iterator[LineCapture]:
    """Every line of every logger, at `level` and above, while the block runs."""
    root = logging.getLogger()
    handler = LineCapture(log_format)
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
