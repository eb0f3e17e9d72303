"""The bench's progress lines, on stderr (the tables go to stdout)."""

from __future__ import annotations

import sys
import time


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
