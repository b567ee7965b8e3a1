"""Runs over time (`manybench history DIR...`, as Galaxy's usage reports): runs per month, per
task the mean and max of its headline figure over runs, failures.

A task's figure in one run is the best (largest) of its points' medians over repetitions of
its headline: the kernel's declared `headline` trait (a metric name, or "bandwidth" /
"ops_rate") when it has one, else the aggregate bandwidth, else aggregate ops/s, else its first
extracted metric. Warm-up phases are left out (points.summarize).
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..kernels import kernel
from ..results.contract import RunInfo
from ..results.store import Store
from .points import PointSummary, summarize


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
class TaskHistory:
    task: str
    figure: str               # "bandwidth" (bytes/s), "ops_rate" (ops/s) or a metric name
    values: list[float] = field(default_factory=list)   # one per run, oldest first
    variant: str = ""         # each variant has its own history: a best point never mixes them

    @property
    def label(self) -> str:
        return f"{self.task} [{self.variant}]" if self.variant else self.task

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def max(self) -> float:
        return max(self.values)


@dataclass
class History:
    runs: list[RunLine]
    per_month: dict[str, int]             # "2026-11" -> runs started that month
    tasks: list[TaskHistory]


_LATENCY = re.compile(r"^lat_(p[\d.]+|max|min|mean)_us$")   # a latency percentile, in us


def _declared(s: PointSummary) -> str | None:
    h = getattr(kernel(s.kernel), "headline", None)   # a trait other work may add
    if isinstance(h, (list, tuple)):
        h = next((x for x in h if isinstance(x, str)), None)
    return h if isinstance(h, str) and h else None


def headline(s: PointSummary) -> tuple[str, float] | None:
    """The point's headline figure (its median over repetitions) and what it is."""
    name = _declared(s)
    if name in ("bandwidth", "ops_rate", "ops_s"):
        st = s.bandwidth if name == "bandwidth" else s.ops_rate
        if st is not None:
            return ("bandwidth" if name == "bandwidth" else "ops_rate"), st.median
    elif name is not None and name in s.metrics:
        return name, s.metrics[name]
    elif name is not None and _LATENCY.match(name) and _LATENCY.match(name).group(1) in \
            s.latency_us:
        return name, s.latency_us[_LATENCY.match(name).group(1)]
    if s.bandwidth is not None:
        return "bandwidth", s.bandwidth.median
    if s.ops_rate is not None and s.ops:
        return "ops_rate", s.ops_rate.median
    if s.metrics:
        first = next(iter(s.metrics))
        return first, s.metrics[first]
    return None


def _month(ns: int) -> str:
    return time.strftime("%Y-%m", time.gmtime(ns / 1e9))


def history(directories: Iterable[str]) -> History:
    """Every run of every directory, oldest first. FileNotFoundError: a directory without
    results; SchemaError: one of a newer manybench."""
    loaded: list[tuple[str, RunInfo, list]] = []
    for d in directories:
        with Store(d, readonly=True) as st:
            for run in st.runs():
                records = st.records(run.run_id)
                points = summarize(records, st.phases(run.run_id))
                loaded.append((d, run, [records, points]))
    loaded.sort(key=lambda x: x[1].started_ns)
    lines, tasks = [], {}
    for d, run, (records, points) in loaded:
        lines.append(RunLine(d, run.run_id, run.name, run.started_ns, run.status, run.phases,
                             sum(r.status != "ok" for r in records)))
        best: dict[tuple[str, str], tuple[str, float]] = {}
        for s in points:
            h = headline(s)
            key = (s.task, s.variant)
            if h is not None and (key not in best or h[1] > best[key][1]):
                best[key] = h
        for (task, variant), (fig, v) in best.items():
            th = tasks.setdefault((task, variant, fig), TaskHistory(task, fig, variant=variant))
            th.values.append(v)
    per_month = dict(sorted(Counter(_month(r.started_ns) for r in lines).items()))
    return History(lines, per_month, list(tasks.values()))
