"""Each slot's own figure against workers: its bytes or ops over its own time, every record a
dot, the median per worker count a line (what one worker gets as more share the machine)."""
from __future__ import annotations

from ...analysis.stats import median, nearest_rank
from ..colunits import rate_unit
from .data import TaskData
from .style import figure, workers

TITLE = "per slot"
MAX_DOTS = 1000


def _secs(r) -> float:
    return r.elapsed_s if r.elapsed_s > 0 else (r.end_ns - r.start_ns) / 1e9


def plot(d: TaskData):
    ok = [r for r in d.ok() if _secs(r) > 0]
    if not ok:
        return None
    if any(r.bytes for r in ok):
        # the unit of the task's aggregate (its table and scaling figure): the per-slot
        # figure beside them reads in the same unit
        aggs = [p.bandwidth.median for p in d.points if p.bandwidth]
        unit, div = rate_unit(aggs or [r.bytes / _secs(r) for r in ok])
        label, value = f"bandwidth per slot ({unit})", lambda r: r.bytes / _secs(r) / div
    elif any(r.ops for r in ok):
        label, value = "ops/s per slot", lambda r: r.ops / _secs(r)
    else:
        label, value = "time per slot (s)", _secs
    fig, (ax,) = figure(f"{d.task}: {label}")
    ws = sorted({r.workers for r in ok})
    if len(ok) <= MAX_DOTS:
        ax.scatter([r.workers for r in ok], [value(r) for r in ok], s=8, alpha=0.5,
                   label="a slot")
    else:   # every dot of a long run would make a page of megabytes: the range they span
        lo = [nearest_rank([value(r) for r in ok if r.workers == w], 5) for w in ws]
        hi = [nearest_rank([value(r) for r in ok if r.workers == w], 95) for w in ws]
        ax.fill_between(ws, lo, hi, alpha=0.25, label="p5-p95 of slots")
    ax.plot(ws, [median([value(r) for r in ok if r.workers == w]) for w in ws], marker="o",
            label="median")
    workers(ax, ws)
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig
