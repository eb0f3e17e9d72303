"""Canonical JSON and its hash.

Policy hashes and argument hashes are stored in decision receipts and compared across processes
and releases, so equal values must always serialize to the same text: keys sorted, no
insignificant whitespace, and non-ASCII kept as UTF-8 rather than escaped.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialize a JSON-compatible value to its one canonical text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of the UTF-8 encoding of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
