"""The ranges the service stores, said once: what a column, a JSON client and ``jsonb`` keep exactly.

Every integer a request names (a path segment, a query or header value, a body field) is checked
against the column it is compared with or written to, so it is a 422 at the edge and never an
overflow in the driver halfway through a response. JSON bodies as a whole are checked by
``app.core.json_guard`` against ``JSON_INT_MAX`` and ``MAX_JSON_DEPTH``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

INT32_MAX = 2**31 - 1
"""PostgreSQL ``integer``: versions, sequence numbers, token counts, loop counters."""
INT64_MAX = 2**63 - 1
"""PostgreSQL ``bigint``: message ids (the messages cursor)."""
JSON_INT_MAX = 2**53 - 1
"""The largest integer every JSON client (IEEE doubles) reads back exactly."""
MAX_JSON_DEPTH = 64
"""Objects and arrays nested deeper than this are refused (serialisers stop near 255)."""

Version = Annotated[StrictInt, Field(ge=1, le=INT32_MAX)]
"""An agent or policy version number in a body (``true`` is not 1)."""
