"""Scenario rows, the plain-text tables, and issue 25's targets with a PASS/MISS/n/a verdict each."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.load import LoadResult, peak_open

GIB_KIB = 1024 * 1024
AR = "agent-runtime"
FLOOR = "floor"
FEATURE_OFF = "off"


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
    feature: str = ""
    """Set on the rows of the features pass: `off`, or the feature that was on (bench/features.py)."""

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
    feature: str = "",
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
        feature=feature,
    )


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else round(a / b, 2)


def add_ratios(rows: list[Row]) -> None:
    """agent-runtime / floor for CPU per turn, turns/s and TTFT p50, on the agent-runtime rows; on the
    features pass's rows also agent-runtime with the feature / without it, for server and PostgreSQL CPU."""
    floors = {(r.scenario, r.concurrency, r.feature): r for r in rows if r.server == FLOOR}
    offs = {(r.scenario, r.concurrency): r for r in rows if r.server == AR and r.feature == FEATURE_OFF}
    for row in rows:
        floor = floors.get((row.scenario, row.concurrency, row.feature and FEATURE_OFF))
        if row.server != AR or floor is None:
            continue
        row.ratio = {
            "cpu_per_turn": _ratio(row.cpu_ms_per_turn, floor.cpu_ms_per_turn),
            "turns_per_s": _ratio(row.turns_per_s, floor.turns_per_s),
            "ttft_p50": _ratio(row.ttft_p50_ms, floor.ttft_p50_ms),
        }
        off = offs.get((row.scenario, row.concurrency))
        if row.feature not in ("", FEATURE_OFF) and off is not None:
            row.ratio["cpu_vs_off"] = _ratio(row.cpu_ms_per_turn, off.cpu_ms_per_turn)
            row.ratio["pg_vs_off"] = _ratio(row.pg_cpu_ms_per_turn, off.pg_cpu_ms_per_turn)


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


FEATURE_COLUMNS: list[tuple[str, str]] = [
    ("scenario", "scenario"),
    ("server", "server"),
    ("feature", "feature"),
    ("c", "concurrency"),
    ("turns", "turns_ok"),
    ("err", "errors"),
    ("turns/s", "turns_per_s"),
    ("ttft p50", "ttft_p50_ms"),
    ("cpu/turn", "cpu_ms_per_turn"),
    ("pg/turn", "pg_cpu_ms_per_turn"),
    ("xCPU", "ratio.cpu_per_turn"),
    ("CPU vs off", "ratio.cpu_vs_off"),
    ("PG vs off", "ratio.pg_vs_off"),
]


def _grid(rows: list[Row], columns: list[tuple[str, str]], left: int) -> list[str]:
    """Header, rule and one line per row; the first `left` columns are left-aligned."""
    cells = [[title for title, _ in columns]] + [[_cell(r, key) for _, key in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]

    def fmt(line: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )

    return [fmt(cells[0]), "  ".join("-" * w for w in widths), *(fmt(line) for line in cells[1:])]


def feature_table(rows: list[Row]) -> str:
    """The features pass: each feature's row next to the same session's feature-off row."""
    out = ["features (each on alone; vs off = agent-runtime with the feature / the off row above it):"]
    out += _grid(rows, FEATURE_COLUMNS, left=3)
    return "\n".join(out)


def table(rows: list[Row]) -> str:
    out = _grid(rows, COLUMNS, left=2)
    out.append(
        "times in ms; cpu/turn = server process tree utime+stime per completed turn; pg/turn = PostgreSQL CPU "
        "(postmaster, aux processes,\nbackends of the bench database); open = most streams open at once; "
        "pg conn = PostgreSQL connections opened during the run; x* = agent-runtime / floor"
    )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- targets

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Target:
    """One target: what was measured (None: not measured), the limit and how the two compare."""

    name: str
    measured: float | None
    limit: float
    comparison: str
    unit: str = ""
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "n/a"
        return "PASS" if COMPARISONS[self.comparison](self.measured, self.limit) else "MISS"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}


def _ar_row(rows: Iterable[Row], scenario: str, concurrency: int) -> Row | None:
    return next(
        (
            r
            for r in rows
            if r.server == AR and not r.feature and r.scenario == scenario and r.concurrency == concurrency
        ),
        None,
    )


def _ratio_of(rows: list[Row], scenario: str, concurrency: int, key: str) -> float | None:
    row = _ar_row(rows, scenario, concurrency)
    return None if row is None else row.ratio.get(key)


CPU_LIMITS = {"text": 1.2, "tool": 1.3}
PG_MS_LIMITS = {"text": 3.0, "tool": 3.5}
THROUGHPUT_LIMITS = {"text": 0.8, "tool": 0.7}
TTFT_LIMIT = 2.0
LEVELS = (1, 10, 50)
LOAD_LEVEL = 50
STATEMENTS_PER_TOOL_TURN = 7
COMMITS_PER_TOOL_TURN = 3
IDLE_STREAMS = 10_000
IDLE_RSS_MIB = 2048.0
OPENAI_GAP = 0.2
OPENAI_PAIRS = (("openai-text", "text"), ("openai-tool", "tool"))
RATIO_KEYS = {"cpu_per_turn": "server CPU/turn", "turns_per_s": "turns/s", "ttft_p50": "TTFT p50"}


def cpu_targets(rows: list[Row]) -> list[Target]:
    """Server CPU per turn ≤ 1.2× the floor (text), 1.3× (tool), at every client count."""
    return [
        Target(f"server CPU/turn vs floor, {s} @{c}", _ratio_of(rows, s, c, "cpu_per_turn"), limit, "<=", "x")
        for s, limit in CPU_LIMITS.items()
        for c in LEVELS
    ]


def pg_targets(rows: list[Row]) -> list[Target]:
    """PostgreSQL CPU per turn ≤ 3 ms (text), 3.5 ms (tool), at 50 clients."""
    out = []
    for scenario, limit in PG_MS_LIMITS.items():
        row = _ar_row(rows, scenario, LOAD_LEVEL)
        measured = None if row is None else row.pg_cpu_ms_per_turn
        out.append(Target(f"PostgreSQL CPU/turn, {scenario} @{LOAD_LEVEL}", measured, limit, "<=", "ms"))
    return out


def throughput_targets(rows: list[Row]) -> list[Target]:
    """Turns/s at 50 clients ≥ 0.8× the floor (text), 0.7× (tool)."""
    return [
        Target(f"turns/s vs floor, {s} @{LOAD_LEVEL}", _ratio_of(rows, s, LOAD_LEVEL, "turns_per_s"), limit, ">=", "x")
        for s, limit in THROUGHPUT_LIMITS.items()
    ]


def ttft_targets(rows: list[Row]) -> list[Target]:
    """Time to the first text event, p50 at one client, ≤ 2× the floor."""
    return [
        Target(f"TTFT p50 vs floor, {s} @1", _ratio_of(rows, s, 1, "ttft_p50"), TTFT_LIMIT, "<=", "x")
        for s in CPU_LIMITS
    ]


def db_count_targets(per_turn: dict[str, dict[str, float]]) -> list[Target]:
    """At most 7 statements and 3 commits per one-tool turn (`--db-stats`; keyed by scenario). The
    commits counted are those of transactions that wrote: every statement outside a transaction
    commits, a read alone too, but only a write pays a WAL flush."""
    tool = per_turn.get("tool", {})
    return [
        Target("statements per tool turn", tool.get("statements"), STATEMENTS_PER_TOOL_TURN, "<=", note="--db-stats"),
        Target(
            "commits that write, per tool turn",
            tool.get("writes"),
            COMMITS_PER_TOOL_TURN,
            "<=",
            note=f"--db-stats; all commits {tool.get('commits', '-')} (a read alone commits too)",
        ),
    ]


def idle_targets(rows: list[Row], streams: int) -> list[Target]:
    """`streams` turns held open together against the slow mock: at least 10,000 of them open at once
    (when 10,000 or more were run; else all of them, labelled so), no errors, RSS < 2 GiB (the limit is
    set for 10,000 streams; a smaller run's verdict says so)."""
    row = next((r for r in rows if r.server == AR and r.scenario == "idle" and r.concurrency == streams), None)
    note = "" if streams >= IDLE_STREAMS else f"ran {streams:,}; the target is for {IDLE_STREAMS:,}"
    if row is not None:
        note = ", ".join(x for x in (f"{row.turns_ok} ok, at most {row.peak_open_streams} open at once", note) if x)
    wanted = IDLE_STREAMS if streams >= IDLE_STREAMS else streams
    label = f"{wanted:,} (the target)" if wanted == IDLE_STREAMS else f"{wanted:,} (all of this run, not the target)"
    return [
        Target(f"{streams:,} open streams: open at once >= {label}", None if row is None else row.peak_open_streams,
               wanted, ">=", note=note),
        Target(f"{streams:,} open streams: errors", None if row is None else row.errors, 0, "<=", note=note),
        Target(f"{streams:,} open streams: peak RSS", None if row is None else row.peak_rss_mib, IDLE_RSS_MIB, "<",
               "MiB", note=note),
    ]  # fmt: skip


def feature_targets(rows: list[Row], features: Iterable[str]) -> list[Target]:
    """With one feature on, the CPU target still holds at 10 clients (ratio to the floor of the features pass)."""
    out = []
    for feature in features:
        for scenario, limit in CPU_LIMITS.items():
            row = next((r for r in rows if r.server == AR and r.feature == feature and r.scenario == scenario), None)
            measured = None if row is None else row.ratio.get("cpu_per_turn")
            note = "" if row is None else f"{row.ratio.get('cpu_vs_off')}x the off run"
            out.append(Target(f"server CPU/turn vs floor, {scenario} +{feature}", measured, limit, "<=", "x", note))
    return out


def openai_targets(rows: list[Row]) -> list[Target]:
    """The `openai` provider's ratios to its floor within 0.2 of the Anthropic ones, metric by metric."""
    out = []
    for openai, anthropic in OPENAI_PAIRS:
        for key, label in RATIO_KEYS.items():
            for c in LEVELS:
                theirs, ours = _ratio_of(rows, openai, c, key), _ratio_of(rows, anthropic, c, key)
                gap = None if theirs is None or ours is None else round(abs(theirs - ours), 2)
                note = f"openai {_show(theirs, 'x')}, anthropic {_show(ours, 'x')}"
                out.append(Target(f"openai vs anthropic {label}, {anthropic} @{c}", gap, OPENAI_GAP, "<=", "x", note))
    return out


def all_targets(
    rows: list[Row],
    *,
    idle_streams: int,
    db_per_turn: dict[str, dict[str, float]],
    features: Iterable[str],
) -> list[Target]:
    """Every target of issue 25, in print order: a target whose figures were not measured is `n/a`."""
    return [
        *cpu_targets(rows),
        *pg_targets(rows),
        *throughput_targets(rows),
        *ttft_targets(rows),
        *db_count_targets(db_per_turn),
        *idle_targets(rows, idle_streams),
        *feature_targets(rows, features),
        *openai_targets(rows),
    ]


def _show(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}"


def targets_text(items: list[Target]) -> str:
    lines = [
        (t.verdict, t.name, f"{t.comparison} {t.limit:g}{t.unit}", _show(t.measured, t.unit), t.note) for t in items
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    out = ["targets (issue 25; ratios are to the floor measured in this run; n/a = not measured):"]
    for line in lines:
        cells = [c.ljust(w) for c, w in zip(line[:4], widths, strict=True)]
        out.append(("  " + "  ".join(cells) + ("  " + line[4] if line[4] else "")).rstrip())
    counts = {v: sum(t.verdict == v for t in items) for v in ("PASS", "MISS", "n/a")}
    out.append("  " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return "\n".join(out)
