"""Per-slot elapsed time of one phase, one bar per slot, the median marked (SMTEF's
per-worker time figure)."""
from __future__ import annotations

from ...analysis.stats import median
from .data import TaskData
from .style import figure

TITLE = "per-slot elapsed"


def plot(d: TaskData):
    phase = d.shown_phase()
    if phase is None:
        return None
    recs = sorted((r for r in d.ok() if r.phase == phase), key=lambda r: (r.node, r.slot))
    secs = [r.elapsed_s if r.elapsed_s > 0 else (r.end_ns - r.start_ns) / 1e9 for r in recs]
    f, unit = next(((f, u) for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))
                    if max(secs) >= f), (1e-9, "ns"))
    fig, (ax,) = figure(f"{d.task}: per-slot elapsed, phase {phase}")
    ax.bar(range(len(recs)), [s / f for s in secs])
    ax.axhline(median(secs) / f, color="#b00020", ls="--", lw=0.8, label="median")
    ax.set_xticks(range(len(recs)), [f"{r.node}/{r.slot}" for r in recs] if len(recs) <= 24
                  else [""] * len(recs), rotation=90, fontsize=6)
    ax.set_ylabel(f"elapsed ({unit})")
    ax.legend(fontsize=7)
    return fig
