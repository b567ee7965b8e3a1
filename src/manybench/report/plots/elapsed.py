"""Per-slot time of one phase, one bar per slot, the phase's median marked (SMTEF's
per-worker time figure)."""
from __future__ import annotations

from ...analysis.slot_figures import slot_seconds
from ...analysis.stats import median
from ...kernels import figures as F
from ..colunits import time_unit
from .data import TaskData
from .few import few
from .style import figure

TITLE = "per-slot elapsed"


def plot(d: TaskData):
    phase = d.shown_phase()
    if phase is None:
        return None
    every = sorted(d.phase_ok(phase), key=lambda r: (r.node, r.slot))
    mid = median([slot_seconds(r) for r in every])     # over every slot, drawn or not
    recs, shown = few(every, slot_seconds)
    secs = [slot_seconds(r) for r in recs]
    unit, f = time_unit(max(secs))
    fig, (ax,) = figure(f"{d.task}: {F.ELAPSED.title}, phase {phase}"
                        + (f" ({shown}longest)" if shown else ""))
    ax.bar(range(len(recs)), [s / f for s in secs])
    ax.axhline(mid / f, color="#b00020", ls="--", lw=0.8, label="the phase's median")
    ax.set_xticks(range(len(recs)), [f"{r.node}/{r.slot}" for r in recs] if len(recs) <= 24
                  else [""] * len(recs), rotation=90, fontsize=6)
    ax.set_ylabel(f"{F.ELAPSED.title} ({unit})")
    ax.legend(fontsize=7)
    return fig
