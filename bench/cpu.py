"""CPU time and memory of processes, read from /proc (Linux only)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

PROC = Path("/proc")
TICK = float(os.sysconf("SC_CLK_TCK"))
PG_AUX = ("checkpointer", "background writer", "walwriter", "autovacuum launcher", "wal writer")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields start after the last ')'
    return raw[raw.rfind(")") + 2 :].split()


def cpu_seconds(pid: int, *, reaped_children: bool = True) -> float | None:
    """utime+stime of a process (all its threads), plus its waited-for children's when asked."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    # after comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    ticks = int(fields[11]) + int(fields[12])
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def children(pid: int) -> list[int]:
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for task in (PROC / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError):
                kids.extend(int(x) for x in (task / "children").read_text().split())
    return kids


def tree(pid: int, *, limit: int = 1000) -> list[int]:
    pids: list[int] = []
    todo = [pid]
    while todo and len(pids) < limit:
        current = todo.pop()
        pids.append(current)
        todo.extend(children(current))
    return pids


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process tree: every live process plus the children each one has reaped."""
    return sum(cpu_seconds(p) or 0.0 for p in tree(pid))


def status_kib(pid: int, key: str) -> int | None:
    """A `kB` field of /proc/PID/status, such as VmRSS or VmHWM."""
    with contextlib.suppress(OSError):
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM (writing 5 to clear_refs); False when the kernel or permissions refuse."""
    try:
        (PROC / str(pid) / "clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _comm(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def is_postgres_of(pid: int, database: str) -> bool:
    """The postmaster, an auxiliary process, or a backend of `database` (not other databases' backends)."""
    cmd = _cmdline(pid)
    if _comm(pid) != "postgres" and not cmd.startswith("postgres"):
        return False
    is_postmaster = cmd.startswith("/") and "postgres" in cmd.split(" ", 1)[0]
    return is_postmaster or f" {database} " in f"{cmd} " or any(aux in cmd for aux in PG_AUX)


def postgres_pids(database: str, known: dict[int, bool] | None = None) -> list[int]:
    """Every PostgreSQL process that counts for `database`; `known` caches the verdict per pid."""
    cache = {} if known is None else known
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        verdict = cache.get(pid)
        if verdict is None:
            verdict = cache[pid] = is_postgres_of(pid, database)
        if verdict:
            found.append(pid)
    return found


class PostgresCpu:
    """CPU used by PostgreSQL for one database between `start` and `stop`.

    Samples in a thread, so backends that start and exit in between still count (up to the last sample
    before their exit). Processes found at `start` count from their time then; later ones from zero.
    """

    def __init__(self, database: str, *, interval: float = 0.2) -> None:
        self.database = database
        self._known: dict[int, bool] = {}
        self.interval = interval
        self._base: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._initial: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self, *, baseline: bool) -> None:
        for pid in postgres_pids(self.database, self._known):
            value = cpu_seconds(pid, reaped_children=False)
            if value is None:
                continue
            if pid not in self._base:
                self._base[pid] = value if baseline else 0.0
            self._last[pid] = value

    def start(self) -> None:
        self._base.clear()
        self._last.clear()
        self._sample(baseline=True)
        self._initial = set(self._base)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="pg-cpu", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(baseline=False)

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sample(baseline=False)
        return sum(self._last[pid] - self._base[pid] for pid in self._last)

    @property
    def new_processes(self) -> int:
        """PostgreSQL processes (new backends: connections opened) that appeared while measuring."""
        return len(set(self._base) - self._initial)


class RssSampler:
    """Peak VmRSS of a process, sampled in a thread (VmHWM is read too when it can be reset)."""

    def __init__(self, pid: int, *, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.hwm_reset = False

    def start(self) -> None:
        self.hwm_reset = reset_peak_rss(self.pid)
        self.peak_kib = status_kib(self.pid, "VmRSS") or 0
        self._thread = threading.Thread(target=self._loop, name="rss", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_kib = max(self.peak_kib, status_kib(self.pid, "VmRSS") or 0)

    def stop(self) -> int:
        """Peak RSS in KiB: the larger of the samples and (when it was reset at start) VmHWM."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        peak = max(self.peak_kib, status_kib(self.pid, "VmRSS") or 0)
        if self.hwm_reset:
            peak = max(peak, status_kib(self.pid, "VmHWM") or 0)
        return peak


def self_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def wall() -> float:
    return time.perf_counter()
