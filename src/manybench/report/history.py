"""`manybench history`: the analysis/history.History as text that fits 80 columns, or JSON."""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from ..analysis.history import History, TaskHistory
from ..units import format_rate
from .formats import count


def _figure(th: TaskHistory, v: float) -> str:
    if th.figure == "bandwidth":
        return format_rate(v)
    if th.figure == "ops_rate":
        return f"{count(v)} ops/s"
    return f"{v:.4g}"


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ns / 1e9))


def render(h: History) -> str:
    out = [f"{len(h.runs)} runs"]
    out.append("\nruns per month")
    out += [f"  {m}  {n:>5}" for m, n in h.per_month.items()]
    out.append("\nruns (UTC)")
    for r in h.runs:
        bad = f"  {r.failed} failed" if r.failed else ""
        out.append(f"  {_when(r.started_ns)}  {r.name[:24]:<24} {r.status:<11} "
                   f"{r.phases:>5} phases{bad}")
    out.append("\nper task and variant (the best point of each run)")
    out.append(f"  {'task':<20} {'figure':<14} {'runs':>4}  {'mean':>14}  {'max':>14}")
    for t in sorted(h.tasks, key=lambda t: (t.task, t.variant)):
        fig = {"bandwidth": "bandwidth", "ops_rate": "ops/s"}.get(t.figure, t.figure)
        out.append(f"  {t.label[:20]:<20} {fig[:14]:<14} {len(t.values):>4}  "
                   f"{_figure(t, t.mean):>14}  {_figure(t, t.max):>14}")
    failed = [r for r in h.runs if r.failed or r.status not in ("finished",)]
    out.append(f"\nfailures: {len(failed)} of {len(h.runs)} runs")
    out += [f"  {r.run_id[:48]}  {r.status}, {r.failed} records not ok" for r in failed]
    return "\n".join(out)


def as_json(h: History) -> dict[str, Any]:
    return {"runs": [asdict(r) for r in h.runs], "per_month": h.per_month,
            "tasks": [{"task": t.task, "variant": t.variant, "figure": t.figure, "runs": len(t.values),
                       "mean": t.mean, "max": t.max, "values": t.values} for t in h.tasks]}
