"""Each slot's own figure against workers: its own bandwidth (its bytes over its own time),
else its own ops rate, else its time; every record a dot, the median over the point's
records a line: the figure the full table shows under that name (analysis/values.py), not
the aggregate's share per slot (aggregate / workers), which is another figure."""
from __future__ import annotations

from ...analysis import aggregates as A
from ...analysis.sketch import Sketch
from ...analysis.slot_figures import own_rate, slot_seconds
from ...analysis.stats import nearest_rank
from ...kernels import figures as F
from .data import TaskData
from .series import Drawn, axis_label, first_value, series
from .style import figure, workers

TITLE = "per slot"
MAX_DOTS = 1000
# the figure drawn and each record's own value of it (in the figure's base unit)
# (and the aggregates' sketch of it: analysis/aggregates.py)
_OWN = ((F.OWN_BANDWIDTH.name, lambda r: own_rate(r, "bytes"), A.OWN_BYTES),
        (F.OWN_OPS_RATE.name, lambda r: own_rate(r, "ops"), A.OWN_OPS),
        (F.ELAPSED.name, slot_seconds, A.SLOT_S))


def plot(d: TaskData):
    found = next(((ss, of, key) for name, of, key in _OWN if (ss := series(d, name))), None)
    few = d.ok_records() <= MAX_DOTS or d.records     # records given: drawn from them
    ok = [r for r in d.ok() if slot_seconds(r) > 0] if few else []
    if (few and not ok) or not d.ok_records() or found is None:
        return None
    ss, of, key = found
    v = first_value(d, ss[0])
    label = axis_label(v, ss[0].scope, ss[0].unit)
    fig, (ax,) = figure(f"{d.task}: {label}")
    value = lambda r: (of(r) or 0.0) / ss[0].factor     # noqa: E731
    if few and len(ok) <= MAX_DOTS:
        ax.scatter([r.workers for r in ok], [value(r) for r in ok], s=8, alpha=0.5,
                   label="a slot")
    else:   # every dot of a long run would make a page of megabytes: the range they span
        ws, lo, hi = _range(d, ok, value, key, ss[0].factor)
        ax.fill_between(ws, lo, hi, alpha=0.25, label="p5-p95 of slots")
    for s in ss:
        ax.plot(s.workers, s.median, marker="o", label=f"{s.label} median".strip())
    workers(ax, sorted({p.workers for p in d.points}))
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return Drawn(fig, ss)


def _range(d: TaskData, ok: list, value, key: str, factor: float
           ) -> tuple[list[int], list[float], list[float]]:
    """Per workers, p5 and p95 of the slots' values: of the records in hand, else of the
    task's phases' sketches (exact while few, within sketch.RELATIVE beyond)."""
    if ok:
        ws = sorted({r.workers for r in ok})
        return (ws, [nearest_rank([value(r) for r in ok if r.workers == w], 5) for w in ws],
                [nearest_rank([value(r) for r in ok if r.workers == w], 95) for w in ws])
    by: dict[int, Sketch] = {}
    for a in d.parts.values():
        if key in a.over and a.over[key].n:
            by.setdefault(a.info.workers, Sketch()).merge(a.over[key])
    ws = sorted(by)
    return (ws, [by[w].quantile(5) / factor for w in ws],
            [by[w].quantile(95) / factor for w in ws])
