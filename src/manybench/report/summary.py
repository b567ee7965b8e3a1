"""The report's numbers by machine: `manybench report DIR --json` and
`manybench.results.summary(DIR)` (docs/results-api.md).

From the same reading as the terminal and HTML report (build.py's RunData, analysis/values.py),
so every number agrees with what the tables show: per run its header, where its time went
(`time`: analysis/time_spent.py, in seconds), warnings and hints;
per task and point every figure (analysis/values.Value: figure, label, unit, scope, over, n,
median, min, max, p99, ci_low, ci_high, interval_note, direction, shape, fixed, quantiles;
and shown_unit, shown_factor: the unit the tables and figures write it in, value /
shown_factor = the number they show), the kernel's flags, the
efficiency of peak and the share of N x single-node, and per phase the aggregate throughput
over time (analysis/throughput.py, the series the HTML figure draws).
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict
from typing import Any

from ..analysis.points import point_of
from ..analysis.throughput import phase_series, planned_interval, slot_starts
from ..analysis.time_spent import TimeSpent
from ..kernels import figures as F
from ..kernels import kernel
from ..results.store import Store
from . import header as head
from .build import RunData, chosen_runs, read_run, run_header
from .colunits import figure_units
from .findings import run_hints
from .headline import scope_values

# bumped when a key changes meaning. 2: a point's `point` is an object (its key's fields),
# no longer that key's JSON text; `facts` added; a metric whose name says its unit is given
# in it; a job's figure has no per-slot share; `shown_unit`
FORMAT = 2


def _clean(x: Any) -> Any:
    """JSON has no inf or nan: they become None."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _series(store: Store, data: RunData, point: str, task: str, sampled: dict[int, int]
            ) -> list[dict]:
    """The aggregate throughput over time of each of the point's phases that was sampled
    (its samples and records read, a phase at a time: a run's samples are never all held)."""
    phases = [p.index for p in data.phases if p.point == point]
    interval = planned_interval(data.info.plan_raw, task)
    out = []
    for i in phases:
        mine = store.samples(data.info.run_id, i) if i in sampled else []
        series = phase_series(i, mine, interval, slot_starts(
            store.phase_records_of(data.info.run_id, i))) if mine else None
        if series is not None:
            out.append(asdict(series))
    return out


def _shown_units(pts: list, data: RunData) -> dict[str, dict[str, tuple[str, float]]]:
    """Per figure and scope of a task, the unit its table column and plots write it in."""
    names = dict.fromkeys(n for p in pts for n in data.values[p.point])
    return {n: figure_units(scope_values(pts, data.values, n)) for n in names}


def run_summary(store: Store, data: RunData) -> dict:
    """One run's summary (see the module docstring)."""
    info = data.info
    sampled = store.sample_counts(info.run_id)
    tasks: list[dict] = []
    for task, pts in data.by_task().items():
        points = []
        shown = _shown_units(pts, data)
        for p in pts:
            e = data.effs.get(p.point)
            flags = {f.name: {"value": p.metrics[f.name], "text": f.cell(p.metrics[f.name])}
                     for f in kernel(p.kernel).figures
                     if f.role == F.FLAG and f.cell is not None and f.name in p.metrics}
            points.append({
                "point": point_of(p.point), "variant": p.variant, "workers": p.workers,
                "params": p.params, "phases": p.phases, "records": p.records, "ok": p.ok,
                "failed": {"error": p.error, "timeout": p.timeout, "lost": p.lost},
                "figures": [v.as_dict() | dict(zip(("shown_unit", "shown_factor"),
                                                   shown[v.figure][v.scope]))
                            for vs in data.values[p.point].values() for v in vs],
                "counts": {k: {str(c): n for c, n in v.items()} for k, v in p.counts.items()},
                "flags": flags, "facts": [asdict(f) for f in p.facts],
                "efficiency": asdict(e.efficiency) if e and e.efficiency else None,
                "share": asdict(e.share) if e and e.share else None,
                "throughput": _series(store, data, p.point, task, sampled)})
        tasks.append({"task": task, "kernel": pts[0].kernel, "points": points})
    warnings = store.warnings(info.run_id)
    hints = run_hints(store, info, data.summaries, data.read, data.nodes, data.effs)
    return _clean({"run": info.run_id, "name": info.name, "status": info.status,
                   "started_ns": info.started_ns, "ended_ns": info.ended_ns,
                   "header": dict(run_header(data)),
                   "time": _time(TimeSpent.of(info, data.phases)),
                   "warnings": head.warning_lines(warnings),
                   "hints": [asdict(h) for h in hints], "tasks": tasks})


def _time(t: TimeSpent | None) -> dict | None:
    """Where the run's time went, in seconds (the header's "time outside the windows")."""
    return None if t is None else {**asdict(t), "outside_s": t.outside_s}


def summary(store_or_dir: Store | str | os.PathLike, run_id: str | None = None,
            all_runs: bool = False) -> dict:
    """{"format": FORMAT, "runs": [...]}: the latest run of a results directory, the run
    named, or every run (oldest first). An unknown run_id raises KeyError naming the runs."""
    store = store_or_dir if isinstance(store_or_dir, Store) else Store(store_or_dir, readonly=True)
    try:
        return summary_of(store, [read_run(store, r) for r in chosen_runs(store, run_id, all_runs)])
    finally:
        if store is not store_or_dir:
            store.close()


def summary_of(store: Store, data: list[RunData]) -> dict:
    """The summary of runs already read (build.read_run)."""
    return {"format": FORMAT, "runs": [run_summary(store, d) for d in data]}
