"""`agent-runtime eval run`: start an eval over HTTP, show its progress, print its results, and exit
non-zero when the mean score is under `--fail-under` or the candidate scores below its baseline (CI)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, TextIO

import httpx

POLL_SECONDS = 0.5
ENDED = ("completed", "cancelled", "failed")
PASSED, FAILED, UNUSABLE = 0, 1, 2


class EvalCliError(Exception):
    """Something the user can act on, said in one line."""


@dataclass(frozen=True, slots=True)
class EvalArgs:
    dataset: str
    agent: str
    version: int
    baseline: int | None
    fail_under: float | None
    tools: str
    concurrency: int
    as_json: bool


def run_eval(args: EvalArgs, *, base_url: str, token: str | None, out: TextIO = sys.stdout) -> int:
    token = token or os.environ.get("AGENT_RUNTIME_TOKEN")
    if not token:
        print("pass --token or set AGENT_RUNTIME_TOKEN (see `agent-runtime token`)", file=sys.stderr)
        return UNUSABLE
    try:
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
            run, items = _run(client, args)
    except EvalCliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return UNUSABLE
    except httpx.TransportError as exc:
        print(f"error: cannot reach the service at {base_url} ({type(exc).__name__}); is it running?", file=sys.stderr)
        return UNUSABLE
    verdict, reasons = judge_run(run, args.fail_under)
    if args.as_json:
        json.dump({"eval": run, "items": items, "passed": verdict == PASSED, "reasons": reasons}, out, indent=2)
        out.write("\n")
    else:
        out.write(results_table(run, items))
        for reason in reasons:
            out.write(f"FAIL: {reason}\n")
        if verdict == PASSED:
            out.write("PASS\n")
    return verdict


def _run(client: httpx.Client, args: EvalArgs) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    dataset_id = _find(client, "/datasets", args.dataset, "dataset")
    agent_id = _find(client, "/agents", args.agent, "agent")
    body: dict[str, Any] = {"dataset_id": dataset_id, "agent_id": agent_id, "agent_version": args.version,
                            "tools": args.tools, "concurrency": args.concurrency}  # fmt: skip
    if args.baseline is not None:
        body["baseline_version"] = args.baseline
    run = _json(client.post("/evals", json=body))
    while run["status"] not in ENDED:
        if not args.as_json:
            _progress(run, sys.stderr)
        time.sleep(POLL_SECONDS)
        run = _json(client.get(f"/evals/{run['id']}"))
    if not args.as_json:
        _progress(run, sys.stderr)
        sys.stderr.write("\n")
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = _json(
            client.get(f"/evals/{run['id']}/items", params={"limit": 1000, **({"cursor": cursor} if cursor else {})})
        )
        items += page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            return run, items


def _find(client: httpx.Client, path: str, name_or_id: str, kind: str) -> str:
    """An id as given, or the id of the one dataset / agent with that name."""
    try:
        return str(uuid.UUID(name_or_id))
    except ValueError:
        pass
    params = {"name": name_or_id} if kind == "dataset" else {"limit": 200}
    cursor: str | None = None
    while True:
        page = _json(client.get(path, params={**params, **({"cursor": cursor} if cursor else {})}))
        found = [row["id"] for row in page["items"] if row.get("name") == name_or_id]
        if found:
            return str(found[0])
        cursor = page.get("next_cursor")
        if not cursor:
            raise EvalCliError(f"no {kind} named {name_or_id!r}")


def _json(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 400:
        try:
            problem = response.json()
        except ValueError:
            problem = {}
        detail = problem.get("detail") if isinstance(problem, dict) else None
        raise EvalCliError(
            f"{response.request.method} {response.request.url.path}: HTTP {response.status_code} {detail or ''}".strip()
        )
    body: dict[str, Any] = response.json()
    return body


def _progress(run: dict[str, Any], stream: TextIO) -> None:
    total, done = run["progress"]["total"], run["progress"]["done"]
    width = 30
    filled = width * done // total if total else width
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {run['status']}")
    stream.flush()


def judge_run(run: dict[str, Any], fail_under: float | None) -> tuple[int, list[str]]:
    """PASSED, or FAILED with why: a run that did not complete, a mean under the threshold, a regression."""
    reasons = []
    if run["status"] != "completed":
        reasons.append(f"the eval ended {run['status']}" + (f": {run['error']}" if run.get("error") else ""))
    mean = run["summary"]["candidate"]["mean_score"]
    if fail_under is not None and (mean is None or mean < fail_under):
        reasons.append(f"mean score {_fmt(mean)} is under {fail_under}")
    baseline = run["summary"].get("baseline")
    if (
        baseline is not None
        and mean is not None
        and baseline["mean_score"] is not None
        and mean < baseline["mean_score"]
    ):
        comparison = run["summary"]["comparison"]
        reasons.append(
            f"regression: mean {_fmt(mean)} against the baseline's {_fmt(baseline['mean_score'])} "
            f"({comparison['losses']} item(s) worse, {comparison['wins']} better)"
        )
    return (FAILED if reasons else PASSED), reasons


def results_table(run: dict[str, Any], items: list[dict[str, Any]]) -> str:
    summary = run["summary"]
    versions = [summary["candidate"]] + ([summary["baseline"]] if "baseline" in summary else [])
    lines = [f"eval {run['id']}: {run['status']}, {run['progress']['done']}/{run['progress']['total']} scored"]
    header = ["check"] + [f"v{v['version']} pass" for v in versions]
    rows = [header]
    checks = sorted({name for v in versions for name in v["checks"]})
    for name in checks:
        rows.append([name] + [_fmt(v["checks"].get(name, {}).get("pass_rate")) for v in versions])
    rows.append(["mean score"] + [_fmt(v["mean_score"]) for v in versions])
    rows.append(["tokens"] + [str(v["tokens"]) for v in versions])
    rows.append(["p50 / p95 ms"] + [f"{v['latency_ms']['p50']} / {v['latency_ms']['p95']}" for v in versions])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    if "comparison" in summary:
        c = summary["comparison"]
        lines.append(
            f"against v{summary['baseline']['version']}: {c['wins']} better, {c['losses']} worse, {c['ties']} same"
        )
        for changed in c["changed"][:20]:
            lines.append(f"  item {changed['position']}: {_fmt(changed['baseline_score'])} -> {_fmt(changed['score'])}")
    low = [i for i in items if i["agent_version"] == run["agent_version"] and (i["score"] or 0) < 1][:10]
    for item in low:
        reasons = "; ".join(f"{s['type']}: {s['reason']}" for s in item["scores"] if s["score"] < 1)
        lines.append(f"  item {item['position']} scored {_fmt(item['score'])}: {reasons}")
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
