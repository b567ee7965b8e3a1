"""How many slots were busy at each instant of one phase (SMTEF's concurrency figure), on the
coordinator's timebase from T0: a perfect start is a wall at 0, a perfect end another."""
from __future__ import annotations

from ..formats import plural
from .data import TaskData
from .style import figure

TITLE = "concurrency"


def busy_steps(spans: list[tuple[float, float]]) -> tuple[list[float], list[int]]:
    """Step points (time, slots busy from then on) of a set of start..end spans."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    ts, ns, n = [], [], 0
    for t, step in events:
        n += step
        ts.append(t)
        ns.append(n)
    return ts, ns


def _scale(spans: list[tuple[float, float]]) -> tuple[float, str]:
    top = max((b for _, b in spans), default=0.0)
    for f, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if top >= f:
            return f, name
    return 1.0, "ns"


def plot(d: TaskData):
    phase = d.shown_phase()
    if phase is None:
        return None
    recs = d.phase_ok(phase)
    spans = [(float(r.start_ns - r.t0_ns), float(r.end_ns - r.t0_ns)) for r in recs]
    f, unit = _scale(spans)
    ts, ns = busy_steps([(a / f, b / f) for a, b in spans])
    fig, (ax,) = figure(f"{d.task}: slots busy over time, phase {phase} "
                        f"({plural(len(recs), 'worker')})")
    ax.step([0.0] + ts, [0] + ns, where="post")
    ax.axvline(0, color="#888", ls="--", lw=0.8, label="T0")
    ax.set_xlabel(f"time since T0 ({unit})")
    ax.set_ylabel("slots busy")
    ax.set_ylim(0, len(recs) + 0.5)
    ax.legend(fontsize=7)
    return fig
