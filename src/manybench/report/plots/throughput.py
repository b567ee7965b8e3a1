"""Throughput over time inside one phase, from the slots' progress samples: the aggregate
(every slot's progress put on one time grid, the sampling interval from T0, then summed:
analysis/throughput.py) and each slot's own on the same grid."""
from __future__ import annotations

import numpy as np

from ...analysis.throughput import aggregate, phase_series, slot_starts
from ...kernels import figures as F
from ...results.contract import Sample
from ..colunits import rate_unit
from .data import TaskData
from .series import series as plotted
from .style import figure

TITLE = "throughput over time"


def plot(d: TaskData):
    counts = d.sample_counts()
    if not counts:
        return None
    phase = d.shown_phase()
    if phase not in counts:
        phase = max(counts, key=lambda k: counts[k])
    samples = d.phase_samples(phase)
    records = d.phase_records(phase)
    starts = slot_starts(records)
    series = phase_series(phase, samples, d.interval_s, starts)
    if series is None:
        return None
    rate = np.array(series.rate)
    # the unit the task's bandwidth (or ops rate) is written in by its table, where it has one
    own = plotted(d, F.BANDWIDTH.name if series.unit == "B/s" else F.OPS_RATE.name)
    unit, div = (own[0].unit, own[0].factor) if own else rate_unit(rate) \
        if series.unit == "B/s" else ("ops/s", 1.0)
    fig, (ax,) = figure(f"{d.task}: {TITLE}, phase {phase}")
    ax.plot(series.t_s, rate / div, lw=1.6,
            label=f"aggregate (every slot, on a {series.interval_s:g} s grid)")
    by_rank: dict[tuple[str, int], list[Sample]] = {}
    for s in samples:
        by_rank.setdefault((s.node, s.rank), []).append(s)
    for i, (key, mine) in enumerate(sorted(by_rank.items())):
        if len(by_rank) > 64:      # the aggregate alone says more than 64 thin lines
            break
        t, rate = aggregate(mine, series.interval_s, {key: starts.get(key, 0.0)})
        ax.plot(t, rate / div, lw=0.6, alpha=0.5, label="a slot" if i == 0 else None)
    if series.unit == "B/s" and records:
        # the figure the tables show, so a reader sets the points against it: a start and
        # an end where fewer slots run put the middle of the series above it
        bw = next((f.bandwidth for p in d.points for f in p.phase_figures if f.index == phase),
                  None)     # the phase's figures, as analysis made them for the table
        if bw:
            ax.axhline(bw / div, ls="--", lw=1.0, color="0.3",
                       label="phase's aggregate bandwidth, sum(bytes) / window")
    ax.set_xlabel("time since T0 (s)")
    ax.set_ylabel(f"throughput ({unit})")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig
