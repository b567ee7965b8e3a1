"""The task's figure against workers: median with its range over phases, ideal linear scaling
from the fewest workers, and the peak where one applies (SMTEF's figures 5 and 6)."""
from __future__ import annotations

import json

from ..colunits import rate_unit
from .data import TaskData
from ..formats import param_formatter
from ..headline import metric_names
from .style import figure, workers

TITLE = "against workers"


def _series(d: TaskData):
    """(label, unit divisor, getter, linear): the figure drawn for this task."""
    pts = d.points
    if any(p.bandwidth for p in pts):
        unit, div = rate_unit(p.bandwidth.median for p in pts if p.bandwidth)
        return f"aggregate bandwidth ({unit})", div, lambda p: p.bandwidth, True
    if any(p.ops_rate for p in pts):
        return "aggregate ops/s", 1.0, lambda p: p.ops_rate, True
    if any(p.sync_overhead for p in pts):
        return "sync overhead (us), median and p99", 1e3, lambda p: p.sync_overhead, False
    names = metric_names(pts)
    if names:
        name = names[0]
        return f"{name} (median over slots)", 1.0, lambda p: _const(p.metrics.get(name)), False
    return None


class _const:
    """A single value in the shape of a Spread."""
    def __init__(self, v):
        self.median = self.min = self.max = v

    def __bool__(self):
        return self.median is not None


def plot(d: TaskData):
    s = _series(d)
    if s is None:
        return None
    label, div, get, linear = s
    fig, (ax,) = figure(f"{d.task}: {label} {TITLE}")
    curves: dict[str, list] = {}
    for p in d.points:
        key = ", ".join(f"{k}={param_formatter(d.kernel, k)(v)}" for k, v in p.params.items()
                        if _swept(d, k))
        curves.setdefault((p.variant + " " + key).strip(), []).append(p)
    for name, pts in curves.items():
        pts = sorted((p for p in pts if get(p)), key=lambda p: p.workers)
        if not pts:
            continue
        ws = [p.workers for p in pts]
        med = [get(p).median / div for p in pts]
        lo = [get(p).median / div - getattr(get(p), "min", get(p).median) / div for p in pts]
        hi = [getattr(get(p), "max", get(p).median) / div - get(p).median / div for p in pts]
        line = ax.errorbar(ws, med, yerr=[lo, hi], marker="o", capsize=3,
                           label=name or "median (min-max)")
        color = line[0].get_color()
        if hasattr(get(pts[0]), "p99"):
            ax.plot(ws, [get(p).p99 / div for p in pts], ls=":", color=color, label="p99")
        if linear and len(pts) > 1:
            ax.plot(ws, [med[0] * w / ws[0] for w in ws], ls="--", color=color, alpha=0.5,
                    label="ideal linear")
        peaks = [(p.workers, get(p).median / div / e.efficiency.ratio) for p in pts
                 if (e := d.effs.get(p.point)) and e.efficiency and e.efficiency.ratio > 0]
        if peaks:
            ax.plot(*zip(*peaks), ls="-.", marker="^", color="#b00020", label="peak")
    workers(ax, sorted({p.workers for p in d.points}))
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig


def _swept(d: TaskData, key: str) -> bool:
    return len({json.dumps(p.params.get(key), default=str) for p in d.points}) > 1
