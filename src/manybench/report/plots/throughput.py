"""Throughput over time inside one phase, from the slots' progress samples: each slot's rate
between its samples, and the aggregate (every slot's progress summed on one time grid, the
coordinator's timebase, so nodes line up)."""
from __future__ import annotations

import numpy as np

from ...results.contract import Sample
from ..colunits import rate_unit
from .data import TaskData
from .style import figure

TITLE = "throughput over time"


def aggregate(samples: list[Sample]) -> tuple[np.ndarray, np.ndarray]:
    """(interval mid times, aggregate rate) over the union of every slot's sample times."""
    by_rank: dict[tuple[str, int], list[Sample]] = {}
    for s in samples:
        by_rank.setdefault((s.node, s.rank), []).append(s)
    grid = np.unique([s.t_s for s in samples])
    if len(grid) < 2:
        return np.array([]), np.array([])
    total = np.zeros_like(grid)
    for ss in by_rank.values():
        ss.sort(key=lambda s: s.t_s)
        t = np.array([s.t_s for s in ss])
        done = np.array([s.done for s in ss])
        total += np.interp(grid, t, done, left=0.0, right=done[-1])
    return (grid[1:] + grid[:-1]) / 2, np.diff(total) / np.diff(grid)


def plot(d: TaskData):
    if not d.samples:
        return None
    counts: dict[int, int] = {}
    for s in d.samples:
        counts[s.phase_id] = counts.get(s.phase_id, 0) + 1
    phase = d.shown_phase()
    if phase not in counts:
        phase = max(counts, key=lambda k: counts[k])
    samples = [s for s in d.samples if s.phase_id == phase]
    bytes_ = samples[0].unit == "bytes"
    t, rate = aggregate(samples)
    if not len(t):
        return None
    unit, div = rate_unit(rate) if bytes_ else ("ops/s", 1.0)
    fig, (ax,) = figure(f"{d.task}: {TITLE}, phase {phase}")
    ax.plot(t, rate / div, lw=1.6, label="aggregate")
    by_rank: dict[tuple[str, int], list[Sample]] = {}
    for s in samples:
        by_rank.setdefault((s.node, s.rank), []).append(s)
    for i, ss in enumerate(sorted(by_rank.items())):
        pts = sorted(ss[1], key=lambda s: s.t_s)
        ts = np.array([s.t_s for s in pts])
        done = np.array([s.done for s in pts])
        if len(ts) > 1 and len(by_rank) <= 64:
            ax.plot((ts[1:] + ts[:-1]) / 2, np.diff(done) / np.diff(ts) / div, lw=0.6,
                    alpha=0.5, label="a slot" if i == 0 else None)
    ax.set_xlabel("time since T0 (s)")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig
