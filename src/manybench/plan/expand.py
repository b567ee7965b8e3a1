"""Expand a validated Plan into the Phases of a run, in run order.

Order: tasks in plan order; within a task its points (swept params outer, then placement
order and pin, worker counts innermost, as SMTEF walks them); within a point each repeat,
and within a repeat each variant. Variants and repeats therefore alternate A B A B on the same
point, so drift over the run (page cache, thermal, other users) cannot favour one variant.
"""
from __future__ import annotations

import itertools
import json
from typing import Any

from ..kernels import KERNELS
from ..model import Phase, Plan, TaskSpec
from ..units import format_duration, format_size
from . import variant_plan
from .tasks import kernel_params, sweep_points

Point = tuple[dict[str, Any], str, str, int]   # (params, order, pin, workers)


def task_points(plan: Plan, task: TaskSpec) -> list[Point]:
    """A task's points in run order; params parsed for kernels, as given for commands."""
    workers = task.workers or plan.workers
    kernel = KERNELS[task.kernel]
    tdir = task.dir or plan.scratch
    out: list[Point] = []
    for values in sweep_points(task.params):
        # a command's parameters are its template values, as the plan gives them
        params = dict(values) if kernel.from_command else kernel_params(kernel, values)
        params["dir"] = tdir
        for order, pin, w in itertools.product(plan.order, plan.pin, workers):
            out.append((params, order, pin, w))
    return out


def human_value(kernel: str, name: str, value: Any) -> str:
    """A phase parameter as people write it: sizes as 64KiB, durations as 250.00ms."""
    p = KERNELS[kernel].params.get(name) if kernel in KERNELS else None
    if p is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        if p.kind == "size":
            return format_size(value)
        if p.kind == "duration":
            return format_duration(value)
    return str(value)


def label(task: str, kernel: str, variant: str, workers: int, params: dict[str, Any]) -> str:
    """Short human name for progress lines: task [variant] k=v ... workers=N."""
    kv = " ".join(f"{k}={human_value(kernel, k, v)}" for k, v in params.items() if k != "dir")
    var = f" [{variant}]" if variant else ""
    return f"{task}{var} {kv} workers={workers}".replace("  ", " ")


def point_key(task: str, variant: str, workers: int, order: str, pin: str,
              params: dict[str, Any]) -> str:
    """Stable key of a point: same point, same string, whatever the rep or run."""
    return json.dumps({"task": task, "variant": variant, "workers": workers, "order": order,
                       "pin": pin, "params": params}, sort_keys=True, default=str)


def expand(plan: Plan) -> list[Phase]:
    """Every phase of the run, indexed 0.. in run order."""
    # Each variant sees the plan with its `set` applied; its points line up with the other
    # variants' by position (a variant usually changes a value, not the number of points).
    views = [(v.name, v.env, variant_plan(plan, v)) for v in plan.variants] or [("", {}, plan)]
    phases: list[Phase] = []
    for t in range(len(plan.tasks)):
        points = [task_points(vp, vp.tasks[t]) for _, _, vp in views]
        for i in range(max(map(len, points))):
            for rep in range(plan.repeat):
                for (vname, venv, vp), pts in zip(views, points):
                    if i >= len(pts):
                        continue
                    params, order, pin, workers = pts[i]
                    task = vp.tasks[t]
                    phases.append(Phase(
                        index=len(phases), task=task, kernel=task.kernel, variant=vname,
                        rep=rep, workers=workers, order=order, pin=pin, params=dict(params),
                        point=point_key(task.name, vname, workers, order, pin, params),
                        env={**task.env, **venv},
                        label=label(task.name, task.kernel, vname, workers, params)))
    return phases


def describe(phases: list[Phase]) -> str:
    """One aligned line per phase, for --dry-run."""
    rows = []
    for ph in phases:
        kv = " ".join(f"{k}={human_value(ph.kernel, k, v)}" for k, v in ph.params.items()
                      if v is not None)
        rows.append((f"#{ph.index}", ph.task.name, f"[{ph.variant}]" if ph.variant else "",
                     f"rep={ph.rep}", f"workers={ph.workers}", f"{ph.order}/{ph.pin}", kv))
    if not rows:
        return "(no phases)"
    # Leave out a column that is empty on every line (the variant one, without variants).
    cols = [c for c in range(len(rows[0])) if any(r[c] for r in rows)]
    widths = {c: max(len(r[c]) for r in rows) for c in cols}
    return "\n".join("  ".join(r[c].ljust(widths[c]) for c in cols).rstrip() for r in rows)
