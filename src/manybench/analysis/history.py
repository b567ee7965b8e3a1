"""Runs over time (`manybench history DIR...`, as Galaxy's usage reports): runs per month,
every run, failures, and each point's headline figure over the runs it ran in.

Runs are joined point by point, never task by task: a point of one run and a point of another
are the same measurement when their task, kernel, variant, workers, placement and every
parameter are equal (analysis/joins.py; a point's position in its plan is not part of it) and
their slots ran on the same hosts (one host name per node). A point's figure in a run is its
headline figure (analysis/headfigure.py) as `report` shows it: the Value of
analysis/values.py, the median over the run's phases (warm-up phases left out). Over its runs:
the latest, mean, min and max of those medians.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..results.contract import RunInfo, StoredNode
from ..results.store import Store
from .headfigure import headline
from .joins import Identity, identity
from .points import PointSummary
from .run_read import read as read_run
from .values import Value, point_values


@dataclass
class RunLine:
    directory: str
    run_id: str
    name: str
    started_ns: int
    status: str
    phases: int
    failed: int               # records whose status is not ok


@dataclass
class PointRun:
    """A point's headline figure in one run."""
    run_id: str
    directory: str
    started_ns: int
    point: str                # the point's key in that run
    value: Value


@dataclass
class PointHistory:
    """One point (the same measurement in every run it joins) over the runs it ran in."""
    task: str
    kernel: str
    variant: str
    workers: int
    params: dict[str, Any]
    fields: dict[str, Any]    # what it was joined on besides task and kernel (joins.Identity)
    hosts: tuple[str, ...]    # the hosts its slots ran on, one per node, sorted
    figure: str               # the headline figure's name, label, scope, unit, direction:
    label: str                # those of every Value in `runs`
    scope: str
    unit: str
    direction: str
    runs: list[PointRun] = field(default_factory=list)    # oldest first

    @property
    def values(self) -> list[float]:
        return [r.value.median for r in self.runs]

    @property
    def latest(self) -> float:
        return self.values[-1]

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)


@dataclass
class History:
    runs: list[RunLine]
    per_month: dict[str, int]             # "2026-11" -> runs started that month
    points: list[PointHistory]            # in order of first appearance


def _month(ns: int) -> str:
    return time.strftime("%Y-%m", time.gmtime(ns / 1e9))


def _host(n: StoredNode) -> str:
    return str(n.inventory.get("hostname") or n.host or n.name)


def _hosts(s: PointSummary, nodes_of: dict[int, set[str]], host: dict[str, str]
           ) -> tuple[str, ...]:
    """The hosts a point's slots ran on, one per node (two nodes of one host: twice)."""
    nodes = set().union(*(nodes_of.get(f.index, set()) for f in s.phase_figures))
    return tuple(sorted(host.get(n, n) for n in nodes))


@dataclass
class _Run:
    directory: str
    info: RunInfo
    failed: int                             # records whose status is not ok
    points: list[PointSummary]
    values: dict[str, dict[str, list[Value]]]
    hosts: dict[str, tuple[str, ...]]       # point key -> hosts


def _load(directory: str, store: Store, info: RunInfo) -> _Run:
    run = read_run(store, info.run_id, failed=False)     # its aggregates, not its records
    host = {n.name: _host(n) for n in store.nodes(info.run_id)}
    nodes_of = run.nodes_of()
    return _Run(directory, info, run.failed(), run.summaries,
                {s.point: point_values(s, run.spreads.get(s.point)) for s in run.summaries},
                {s.point: _hosts(s, nodes_of, host) for s in run.summaries})


def history(directories: Iterable[str]) -> History:
    """Every run of every directory, oldest first. FileNotFoundError: a directory without
    results; SchemaError: one of a newer manybench."""
    loaded: list[_Run] = []
    for d in directories:
        with Store(d, readonly=True) as st:
            loaded += [_load(d, st, run) for run in st.runs()]
    loaded.sort(key=lambda x: x.info.started_ns)
    lines = []
    points: dict[tuple, PointHistory] = {}
    for run in loaded:
        info = run.info
        lines.append(RunLine(run.directory, info.run_id, info.name, info.started_ns,
                             info.status, info.phases, run.failed))
        for s in run.points:
            v = headline(s, run.values[s.point])
            if v is None:
                continue
            ident: Identity = identity(s.point, s.task)
            key = (ident.id(), s.kernel, run.hosts[s.point], v.figure, v.scope, v.unit)
            ph = points.get(key)
            if ph is None:
                ph = points[key] = PointHistory(
                    s.task, s.kernel, s.variant, s.workers, dict(s.params), ident.fields,
                    run.hosts[s.point], v.figure, v.label, v.scope, v.unit, v.direction)
            ph.runs.append(PointRun(info.run_id, run.directory, info.started_ns, s.point, v))
    per_month = dict(sorted(Counter(_month(r.started_ns) for r in lines).items()))
    return History(lines, per_month, list(points.values()))
