"""Latency percentiles (p50, p90, p99, p99.9, max) against workers, per operation, log scale:
the latency figure's Values (analysis/values.py), in its table column's unit."""
from __future__ import annotations

from ...kernels import figures as F
from .data import TaskData
from .series import Drawn, axis_label, first_value, series
from .style import figure, workers

TITLE = "latency percentiles"
QUANTILES = ("p50", "p90", "p99", "p99.9", "max")


def plot(d: TaskData):
    ss = series(d, F.LATENCY.name)
    if not ss:
        return None
    label = axis_label(first_value(d, ss[0]), ss[0].scope, ss[0].unit)
    fig, (ax,) = figure(f"{d.task}: {TITLE} ({ss[0].unit})")
    for s in ss:
        for q in QUANTILES:
            xy = [(w, x) for w, x in zip(s.workers, s.quantiles.get(q, ())) if x is not None]
            if xy:
                ax.plot(*zip(*xy), marker="o", ms=3, label=f"{s.label} {q}".strip())
    ax.set_yscale("log")
    workers(ax, sorted({p.workers for p in d.points}))
    ax.set_ylabel(label)
    ax.legend(fontsize=6, ncol=2)
    return Drawn(fig, ss)
