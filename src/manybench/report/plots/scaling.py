"""The task's first figure against workers, as its table shows it (its Values, in its
column's unit): median with its range, a distribution's p99, ideal linear scaling from the
fewest workers for a figure summed over slots, and the peak where one applies (SMTEF's
figures 5 and 6)."""
from __future__ import annotations

from ..headline import default_figures
from .data import TaskData
from .series import Drawn, axis_label, first_value, series
from .style import figure, workers

TITLE = "against workers"


def _drawn(d: TaskData):
    """The series of the task's first headline figure it has (skew is no headline here)."""
    for name in default_figures(d.points):
        ss = series(d, name)
        if ss:
            return ss
    return []


def plot(d: TaskData):
    ss = _drawn(d)
    if not ss:
        return None
    v = first_value(d, ss[0])
    label = axis_label(v, ss[0].scope, ss[0].unit)
    fig, (ax,) = figure(f"{d.task}: {label} {TITLE}")
    # a sum over slots scales linearly at best; a slot's own figure or a time does not
    linear = v.scope == "aggregate" and v.over == "phases" and v.shape == "value"
    for s in ss:
        lo = [m - a for m, a in zip(s.median, s.low)]
        hi = [b - m for m, b in zip(s.median, s.high)]
        line = ax.errorbar(s.workers, s.median, yerr=[lo, hi], marker="o", capsize=3,
                           label=s.label or "median (min-max)")
        color = line[0].get_color()
        if any(x is not None for x in s.p99):
            ax.plot(s.workers, [float("nan") if x is None else x for x in s.p99], ls=":",
                    color=color, label="p99")
        if linear and len(s.workers) > 1:
            ax.plot(s.workers, [s.median[0] * w / s.workers[0] for w in s.workers], ls="--",
                    color=color, alpha=0.5, label="ideal linear")
        peaks = [(w, m / e.efficiency.ratio) for w, m, p in zip(s.workers, s.median, s.points)
                 if (e := d.effs.get(p)) and e.efficiency and e.efficiency.ratio > 0]
        if peaks:
            ax.plot(*zip(*peaks), ls="-.", marker="^", color="#b00020", label="peak")
    workers(ax, sorted({p.workers for p in d.points}))
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return Drawn(fig, ss)
