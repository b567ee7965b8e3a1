"""Throughput over time inside one phase, from the slots' progress samples (issue 17, item 1).

Each slot samples its cumulative progress at T0 + k x interval (node/sampler.py), plus one
exact sample at its end; the slots' sample instants differ by microseconds. Summing them
as they come (over the union of every slot's instants) divides microseconds-apart
differences by microseconds: spikes of TiB/s and then 0. So every slot's progress is first
put on ONE time grid, the sampling interval from T0, and only then summed:

  each slot's cumulative progress, a piecewise-linear curve from (its start, 0) through its
  samples, is read at the grid's edges 0, dt, 2 dt, ... and the phase's last sample (a last
  bin shorter than dt / 2 is merged into the one before); the aggregate rate of a bin is the
  sum of the slots' progress over the bin / its width.

A slot's rate in a bin is then at most its own fastest rate between two of its samples, and
the aggregate a sum of rates over the same instants.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..extra_keys import RANK
from ..status import OK_TEXT
from ..plan.observe import observe_fields, plan_observe
from ..record import Record
from ..results.contract import Sample
from .stats import median


@dataclass(frozen=True)
class Series:
    """The aggregate throughput of one phase: bin mid times (s since T0) and rates."""
    phase: int
    unit: str               # "B/s" or "ops/s"
    interval_s: float       # the grid's step
    t_s: list[float]
    rate: list[float]


def _by_slot(samples: list[Sample]) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    out: dict[tuple[str, int], list[Sample]] = {}
    for s in samples:
        out.setdefault((s.node, s.rank), []).append(s)
    series = {}
    for key, ss in out.items():
        ss.sort(key=lambda s: s.t_s)
        series[key] = (np.array([s.t_s for s in ss]), np.array([s.done for s in ss]))
    return series


def infer_interval(samples: list[Sample]) -> float | None:
    """The sampling interval: the median step between a slot's samples, its last (exact end)
    sample left out; None when no slot has two regular samples."""
    steps: list[float] = []
    for t, _ in _by_slot(samples).values():
        steps += [float(x) for x in np.diff(t[:-1]) if x > 0]
    return median(steps) if steps else None


def grid(t_end: float, dt: float) -> np.ndarray:
    """Edges 0, dt, 2 dt, ... t_end; a last bin shorter than dt / 2 joins the one before."""
    n = int(np.floor(t_end / dt))
    edges = [k * dt for k in range(n + 1) if k * dt < t_end]
    if len(edges) > 1 and t_end - edges[-1] < dt / 2:
        edges.pop()
    return np.array(edges + [t_end])


def aggregate(samples: list[Sample], interval_s: float | None = None,
              starts: dict[tuple[str, int], float] | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """(bin mid times, aggregate rate per second) of one phase's samples on one grid.

    interval_s: the grid's step (default: inferred from the samples); starts: each slot's
    (node, rank) start in s since T0, where its progress was 0 (default: T0)."""
    slots = _by_slot(samples)
    if not slots:
        return np.array([]), np.array([])
    dt = interval_s or infer_interval(samples)
    t_end = max(float(t[-1]) for t, _ in slots.values())
    if t_end <= 0:
        return np.array([]), np.array([])
    dt = dt if dt and dt > 0 else t_end
    edges = grid(t_end, dt)
    total = np.zeros_like(edges)
    for key, (t, done) in slots.items():
        t0 = min((starts or {}).get(key, 0.0), float(t[0]))
        if t[0] > t0:
            t, done = np.concatenate(([t0], t)), np.concatenate(([0.0], done))
        total += np.interp(edges, t, done, left=0.0, right=float(done[-1]))
    return (edges[1:] + edges[:-1]) / 2, np.diff(total) / np.diff(edges)


def phase_series(phase: int, samples: list[Sample], interval_s: float | None = None,
                 starts: dict[tuple[str, int], float] | None = None) -> Series | None:
    """The aggregate series of one phase's samples, or None when it has none to draw."""
    mine = [s for s in samples if s.phase_id == phase]
    if not mine:
        return None
    t, rate = aggregate(mine, interval_s, starts)
    if not len(t):
        return None
    unit = "B/s" if mine[0].unit == "bytes" else "ops/s"
    dt = float(t[1] - t[0]) if len(t) > 1 else float(2 * t[0])
    return Series(phase, unit, interval_s or infer_interval(mine) or dt,
                  [float(x) for x in t], [float(x) for x in rate])


def planned_interval(plan_raw: dict, task: str) -> float | None:
    """The sampling interval the plan gave the task (its own `sample`, else the plan's,
    else the default); None when the plan does not name the task."""
    for t in plan_raw.get("task") or []:
        if isinstance(t, dict) and t.get("name") == task:
            own = observe_fields(t, (), [])[1]
            return own if own is not None else plan_observe(plan_raw)["sample"]
    return None


def slot_starts(records: list[Record]) -> dict[tuple[str, int], float]:
    """Each ok record's (node, rank) -> its start in s since its T0."""
    return {(r.node, int(r.extra[RANK])): (r.start_ns - r.t0_ns) / 1e9 for r in records
            if r.status == OK_TEXT and isinstance((r.extra or {}).get(RANK), int)}
