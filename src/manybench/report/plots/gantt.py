"""Each slot's start..end in one phase, one bar per slot, from T0 on the coordinator's
timebase (every node's stamps converted there): late starters and stragglers stand out."""
from __future__ import annotations

from .data import TaskData
from .few import few
from .style import figure
from .timeline import _scale

TITLE = "gantt"


def plot(d: TaskData):
    phase = d.shown_phase()
    if phase is None:
        return None
    recs, shown = few(sorted(d.phase_ok(phase), key=lambda r: (r.node, r.slot)),
                      lambda r: r.end_ns - r.t0_ns)
    spans = [(float(r.start_ns - r.t0_ns), float(r.end_ns - r.t0_ns)) for r in recs]
    f, unit = _scale(spans)
    fig, (ax,) = figure(f"{d.task}: each slot's start..end, phase {phase}"
                        + (f" ({shown}latest ends)" if shown else ""))
    labels = [f"{r.node}/{r.slot}" for r in recs]
    ax.barh(range(len(recs)), [(b - a) / f for a, b in spans], left=[a / f for a, _ in spans],
            height=0.7)
    # a start mark too: a slot that did no work (null) has a bar too thin to see
    ax.plot([a / f for a, _ in spans], range(len(recs)), "|", color="#b00020", ms=9,
            label="start")
    ax.axvline(0, color="#888", ls="--", lw=0.8, label="T0")
    ax.legend(fontsize=7)
    ax.set_yticks(range(len(recs)), labels if len(recs) <= 32 else [""] * len(recs))
    ax.invert_yaxis()
    ax.set_xlabel(f"time since T0 ({unit})")
    ax.set_ylabel("node/slot")
    return fig
