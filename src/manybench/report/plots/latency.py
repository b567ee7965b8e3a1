"""Latency percentiles (p50, p90, p99, p99.9, max) against workers, per operation, log scale."""
from __future__ import annotations

from .data import TaskData
from .style import figure, workers

TITLE = "latency percentiles"


def plot(d: TaskData):
    pts = sorted((p for p in d.points if p.latency_us), key=lambda p: p.workers)
    if not pts:
        return None
    fig, (ax,) = figure(f"{d.task}: {TITLE} (us)")
    qs = [q for q in ("p50", "p90", "p99", "p99.9", "max") if any(q in p.latency_us for p in pts)]
    groups: dict[str, list] = {}
    for p in pts:
        key = ", ".join(f"{k}={v}" for k, v in sorted(p.params.items())
                        if len({str(x.params.get(k)) for x in pts}) > 1)
        groups.setdefault(((p.variant + " ") if p.variant else "") + key, []).append(p)
    for name, ps in groups.items():
        for q in qs:
            xs = [(p.workers, p.latency_us[q]) for p in ps if q in p.latency_us]
            if xs:
                ax.plot(*zip(*xs), marker="o", ms=3, label=f"{name} {q}".strip())
    ax.set_yscale("log")
    workers(ax, sorted({p.workers for p in pts}))
    ax.set_ylabel("latency (us)")
    ax.legend(fontsize=6, ncol=2)
    return fig
