"""Size-indexed tables (OSU, IMB: results' `series`) against message size, log-log: one line
per series and point (variant, swept parameters), the median over its repetitions and ranks;
one panel per unit (latency in us, bandwidth in MB/s). Counts (repetitions) are left out."""
from __future__ import annotations

import statistics

from .data import TaskData
from .style import figure

TITLE = "against message size"
MAX_LINES = 12               # past this a legend is unreadable: the first ones, by name


def _point_labels(d: TaskData) -> dict[int, str]:
    """phase index -> "variant k=v" with the parameters that vary over the task's phases."""
    swept = {k for k in {k for p in d.phases for k in p.params}
             if len({str(p.params.get(k)) for p in d.phases}) > 1}
    return {p.index: " ".join([p.variant] * bool(p.variant) + [f"{k}={p.params.get(k)}"
                                                                for k in sorted(swept)])
            for p in d.phases}


def plot(d: TaskData):
    pts = [s for s in getattr(d, "series", ()) if s.unit != "count"]
    warm = {p.index for p in d.phases if p.warmup}
    pts = [s for s in pts if s.phase_id not in warm]
    if not pts:
        return None
    labels = _point_labels(d)
    lines: dict[tuple[str, str, str], dict[float, list[float]]] = {}
    for s in pts:
        key = (s.unit, s.name, labels.get(s.phase_id, ""))
        lines.setdefault(key, {}).setdefault(s.x, []).append(s.y)
    units = sorted({k[0] for k in lines})
    fig, axes = figure(f"{d.task}: {TITLE}", rows=len(units))
    for ax, unit in zip(axes, units):
        keys = sorted(k for k in lines if k[0] == unit)[:MAX_LINES]
        for key in keys:
            xy = sorted((x, statistics.median(ys)) for x, ys in lines[key].items())
            pos = [(x, y) for x, y in xy if x > 0 and y > 0]    # log axes: 0 bytes left out
            if pos:
                ax.plot(*zip(*pos), marker="o", ms=2.5, label=f"{key[2]} {key[1]}".strip())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel(unit)
        ax.legend(fontsize=6, ncol=2)
    axes[-1].set_xlabel("message size (bytes)")
    return fig
