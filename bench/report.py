"""Scenario rows, the one plain-text table, and the issue-6 targets with PASS/MISS."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.load import LoadResult, peak_open

GIB_KIB = 1024 * 1024


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100) of `values`, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


@dataclass
class Row:
    scenario: str
    server: str
    concurrency: int
    turns_ok: int
    errors: int
    wall_s: float
    turns_per_s: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    ttfe_p50_ms: float | None
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    cpu_ms_per_turn: float | None
    pg_cpu_ms_per_turn: float | None
    client_cpu_ms_per_turn: float | None
    mock_cpu_ms_per_turn: float | None
    peak_rss_mib: float | None = None
    peak_open_streams: int = 0
    pg_new_backends: int | None = None
    error_kinds: dict[str, int] = field(default_factory=dict)
    ratio: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_row(
    scenario: str,
    server: str,
    concurrency: int,
    load: LoadResult,
    *,
    cpu_s: float,
    pg_cpu_s: float | None,
    client_cpu_s: float,
    mock_cpu_s: float | None,
    peak_rss_kib: int | None = None,
    pg_new_backends: int | None = None,
) -> Row:
    ok = load.ok
    n = len(ok)

    def per_turn(seconds: float | None) -> float | None:
        return None if seconds is None or n == 0 else round(seconds * 1000 / n, 2)

    ttft = [r.ttft for r in ok if r.ttft is not None]
    ttfe = [r.ttfe for r in ok if r.ttfe is not None]
    lat = [r.latency for r in ok if r.latency is not None]
    return Row(
        scenario=scenario,
        server=server,
        concurrency=concurrency,
        turns_ok=n,
        errors=load.errors + load.not_started,
        wall_s=round(load.wall_seconds, 3),
        turns_per_s=round(n / load.wall_seconds, 2) if load.wall_seconds > 0 else None,
        ttft_p50_ms=_ms(percentile(ttft, 50)),
        ttft_p99_ms=_ms(percentile(ttft, 99)),
        ttfe_p50_ms=_ms(percentile(ttfe, 50)),
        latency_p50_ms=_ms(percentile(lat, 50)),
        latency_p99_ms=_ms(percentile(lat, 99)),
        cpu_ms_per_turn=per_turn(cpu_s),
        pg_cpu_ms_per_turn=per_turn(pg_cpu_s),
        client_cpu_ms_per_turn=per_turn(client_cpu_s),
        mock_cpu_ms_per_turn=per_turn(mock_cpu_s),
        peak_rss_mib=None if peak_rss_kib is None else round(peak_rss_kib / 1024, 1),
        peak_open_streams=peak_open(load.results),
        pg_new_backends=pg_new_backends,
        error_kinds={**load.error_kinds(), **({"not_started": load.not_started} if load.not_started else {})},
    )


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else round(a / b, 2)


def add_ratios(rows: list[Row]) -> None:
    """agent-runtime / floor for CPU per turn, turns/s and TTFT p50, on the agent-runtime rows."""
    floors = {(r.scenario, r.concurrency): r for r in rows if r.server == "floor"}
    for row in rows:
        floor = floors.get((row.scenario, row.concurrency))
        if row.server != "agent-runtime" or floor is None:
            continue
        row.ratio = {
            "cpu_per_turn": _ratio(row.cpu_ms_per_turn, floor.cpu_ms_per_turn),
            "turns_per_s": _ratio(row.turns_per_s, floor.turns_per_s),
            "ttft_p50": _ratio(row.ttft_p50_ms, floor.ttft_p50_ms),
        }


COLUMNS: list[tuple[str, str]] = [
    ("scenario", "scenario"),
    ("server", "server"),
    ("c", "concurrency"),
    ("turns", "turns_ok"),
    ("err", "errors"),
    ("turns/s", "turns_per_s"),
    ("ttft p50", "ttft_p50_ms"),
    ("ttft p99", "ttft_p99_ms"),
    ("lat p50", "latency_p50_ms"),
    ("lat p99", "latency_p99_ms"),
    ("cpu/turn", "cpu_ms_per_turn"),
    ("pg/turn", "pg_cpu_ms_per_turn"),
    ("rss MiB", "peak_rss_mib"),
    ("open", "peak_open_streams"),
    ("pg conn", "pg_new_backends"),
    ("xCPU", "ratio.cpu_per_turn"),
    ("xTPS", "ratio.turns_per_s"),
    ("xTTFT", "ratio.ttft_p50"),
]


def _cell(row: Row, key: str) -> str:
    value = row.ratio.get(key[6:]) if key.startswith("ratio.") else getattr(row, key)
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def table(rows: list[Row]) -> str:
    cells = [[title for title, _ in COLUMNS]] + [[_cell(r, key) for _, key in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]

    def fmt(line: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True)))

    out = [fmt(cells[0]), "  ".join("-" * w for w in widths)]
    out += [fmt(line) for line in cells[1:]]
    out.append(
        "times in ms; cpu/turn = server process tree utime+stime per completed turn; pg/turn = PostgreSQL CPU "
        "(postmaster, aux processes,\nbackends of the bench database); open = most streams open at once; "
        "pg conn = PostgreSQL connections opened during the run; x* = agent-runtime / floor"
    )
    return "\n".join(out)


@dataclass
class Target:
    name: str
    limit: str
    measured: str
    passed: bool | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _find(rows: list[Row], server: str, scenario: str, concurrency: int | None = None) -> list[Row]:
    return [
        r
        for r in rows
        if r.server == server and r.scenario == scenario and (concurrency is None or r.concurrency == concurrency)
    ]


def _check(name: str, limit: str, pairs: list[tuple[str, float | None]], ok: Any) -> Target:
    known = [(label, v) for label, v in pairs if v is not None]
    if not known:
        return Target(name, limit, "not measured", None)
    measured = ", ".join(f"{label} {v:g}" for label, v in known)
    return Target(name, limit, measured, all(ok(v) for _, v in known) and len(known) == len(pairs))


def targets(rows: list[Row], *, idle_streams: int) -> list[Target]:
    ar = "agent-runtime"
    compared = [r for r in rows if r.server == ar and r.scenario in ("text", "tool") and r.ratio]
    out = [
        _check(
            "server CPU per turn vs floor",
            "<= 1.5x",
            [(f"{r.scenario}@{r.concurrency} x", r.ratio.get("cpu_per_turn")) for r in compared],
            lambda v: v <= 1.5,
        ),
        _check(
            "PostgreSQL CPU per turn",
            "<= 3 ms",
            [
                (f"{r.scenario}@{r.concurrency}", r.pg_cpu_ms_per_turn)
                for r in rows
                if r.server == ar and r.scenario in ("text", "tool", "scripted")
            ],
            lambda v: v <= 3.0,
        ),
        _check(
            "turns/s at 50 concurrent vs floor",
            ">= 0.6x",
            [(f"{r.scenario} x", r.ratio.get("turns_per_s")) for r in compared if r.concurrency == 50],
            lambda v: v >= 0.6,
        ),
        _check(
            "time to first text event p50 at 1 client vs floor",
            "<= 3x",
            [(f"{r.scenario} x", r.ratio.get("ttft_p50")) for r in compared if r.concurrency == 1],
            lambda v: v <= 3.0,
        ),
    ]
    idle = _find(rows, ar, "idle", idle_streams)
    if idle:
        row = idle[0]
        rss = row.peak_rss_mib
        passed = row.errors == 0 and row.turns_ok == idle_streams and rss is not None and rss < 1024
        measured = (
            f"{row.turns_ok} ok, {row.errors} errors, peak RSS {rss} MiB, "
            f"at most {row.peak_open_streams} streams open at once"
        )
        out.append(Target(f"{idle_streams} open streams", "0 errors, RSS < 1024 MiB", measured, passed))
    else:
        out.append(Target(f"{idle_streams} open streams", "0 errors, RSS < 1024 MiB", "not measured", None))
    return out


def targets_text(items: list[Target]) -> str:
    width = max(len(t.name) for t in items)
    limit_width = max(len(t.limit) for t in items)
    lines = ["targets (issue 6):"]
    for t in items:
        verdict = "PASS" if t.passed else ("MISS" if t.passed is False else "n/a ")
        lines.append(f"  {verdict}  {t.name.ljust(width)}  {t.limit.ljust(limit_width)}  {t.measured}")
    return "\n".join(lines)
