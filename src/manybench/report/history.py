"""`manybench history`: the analysis/history.History as a view terminal.py lays out like the
report (runs per month, the runs, a table per task and figure: a row per point), or JSON.

A task's table heads each figure column with its one unit, chosen from the values of the
column (report/colunits.py), so 800 MiB/s and 11 GiB/s never share a column as "800" and
"11"; its rows are the points history joined, the fields in which they differ as columns."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict
from typing import Any

from rich.console import Console

from ..results.contract import RunStatus
from ..analysis.history import History, PointHistory
from ..analysis.points import point_of
from .colunits import column_unit, num
from .formats import DASH, param_formatter, plural
from .terminal import render_view
from .view import RunView, Table

JOINED = ("joined: a row is one point, the same in every run it joins: task, kernel, "
          "variant, workers, placement, every parameter, and the hosts its slots ran on (one "
          "per node); its figure in a run is the point's median over that run's phases, as "
          "`report` shows it; runs, latest, mean, min and max are over the runs it ran in")
LEGEND = "history: docs/definitions.md (history figure); points joined as analysis/joins.py says"


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ns / 1e9))


def hosts_text(hosts: tuple[str, ...]) -> str:
    """"vm", "vm x2" (two nodes on one host), "a, b"."""
    return ", ".join(h + (f" x{n}" if n > 1 else "") for h, n in Counter(hosts).items()) \
        or DASH


def _field_text(ph: PointHistory, name: str) -> str:
    if name not in ph.fields:
        return DASH
    return param_formatter(ph.kernel, name.removeprefix("params."))(ph.fields[name])


def _varying(points: list[PointHistory]) -> list[str]:
    """The fields (besides variant and workers) whose values differ between the rows."""
    names = list(dict.fromkeys(k for p in points for k in p.fields))
    return [k for k in names if k not in ("variant", "workers")
            and len({_field_text(p, k) for p in points}) > 1]


def _figure_title(ph: PointHistory) -> str:
    better = {"higher": ", higher is better", "lower": ", lower is better"}.get(ph.direction, "")
    return f"{ph.label}, {ph.scope}".replace("\n", " ") + better


def point_table(points: list[PointHistory], hosts_said: bool = False) -> Table:
    """One task's points of one figure: a row each, its figure over runs in one unit; the
    hosts as a column where they differ, else below the table (`hosts_said`: the view says
    them once for every table)."""
    first = points[0]
    variant = any(p.variant for p in points)
    varying = _varying(points)
    several_hosts = len({p.hosts for p in points}) > 1
    keys = (["variant"] if variant else []) + ["workers"] + varying + \
        (["hosts"] if several_hosts else [])
    stats = [[p.latest, p.mean, p.min, p.max] for p in points]
    unit, div = column_unit(first.unit, [x for row in stats for x in row])
    u = f"\n{unit}" if unit else ""
    rows = []
    for p, row in zip(points, stats):
        cells = ([p.variant or DASH] if variant else []) + [str(p.workers)]
        cells += [_field_text(p, k) for k in varying]
        cells += [hosts_text(p.hosts)] if several_hosts else []
        rows.append(cells + [str(len(p.runs))] + [num(x / div) for x in row])
    title = f"{first.task} ({first.kernel}): {_figure_title(first)}"
    notes = [] if several_hosts or hosts_said else [f"on {hosts_text(first.hosts)}"]
    return Table(title=title, columns=keys + ["runs", f"latest{u}", f"mean{u}", f"min{u}",
                                              f"max{u}"],
                 rows=rows, keys=len(keys), notes=notes, task=first.task)


def view(h: History) -> RunView:
    """What `manybench history` prints."""
    months = Table(title="runs per month", columns=["month", "runs"],
                   rows=[[m, str(n)] for m, n in h.per_month.items()])
    runs = Table(title="runs (UTC)", columns=["started", "name", "status", "phases", "not ok"],
                 rows=[[_when(r.started_ns), r.name, r.status, str(r.phases),
                        str(r.failed) if r.failed else ""] for r in h.runs], keys=1)
    groups: dict[tuple, list[PointHistory]] = {}
    for p in h.points:
        groups.setdefault((p.task, p.kernel, p.figure, p.scope, p.unit), []).append(p)
    failed = [r for r in h.runs if r.failed or r.status != RunStatus.FINISHED]
    notes = [JOINED, f"failures: {len(failed)} of {plural(len(h.runs), 'run')}"
             + "".join(f"; {r.run_id} {r.status}, {r.failed} records not ok" for r in failed)]
    hosts = {p.hosts for p in h.points}
    one_host = len(hosts) == 1      # said once here, not below every table
    if one_host:
        notes.append(f"every point ran on {hosts_text(hosts.pop())}")
    return RunView(title=f"history of {plural(len(h.runs), 'run')}", header=[], notes=notes,
                   tables=[months, runs] + [point_table(ps, one_host)
                                            for ps in groups.values()],
                   legend=LEGEND)


def render(h: History, console: Console | None = None) -> None:
    render_view(view(h), console)


def as_json(h: History) -> dict[str, Any]:
    """The runs, runs per month, and per point its fields, hosts, figure and each run's Value
    (analysis/values.Value, as `report --json` gives it) with latest, mean, min and max."""
    return {"runs": [asdict(r) for r in h.runs], "per_month": h.per_month,
            "points": [{"task": p.task, "kernel": p.kernel, "variant": p.variant,
                        "workers": p.workers, "params": p.params, "fields": p.fields,
                        "hosts": list(p.hosts), "figure": p.figure, "label": p.label,
                        "scope": p.scope, "unit": p.unit, "direction": p.direction,
                        "runs": [{"run": r.run_id, "directory": r.directory,
                                  "started_ns": r.started_ns, "point": point_of(r.point),
                                  "value": r.value.as_dict()} for r in p.runs],
                        "latest": p.latest, "mean": p.mean, "min": p.min, "max": p.max}
                       for p in h.points]}
