"""What the figures of one task are drawn from, gathered once per run from the store.

Samples and telemetry come from `Store.samples` / `Store.telemetry` (the store migrates an
older results.db, whose tables are then empty): lists of results.contract.Sample /
TelemetryRow; the figures that need them are left out where they are empty.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Callable

from ...analysis import PointSummary, summarize
from ...analysis.efficiency import NodePeaks, PointEfficiency, evaluate
from ...analysis.values import Value, metric_spreads, point_values
from ...inventory.peaks import Peaks
from ...analysis.throughput import planned_interval
from ...record import Record
from ...results.contract import RunInfo, Sample, StoredPhase, TelemetryRow
from ...results.store import Store
from .. import header as head


@dataclass
class TaskData:
    task: str
    kernel: str
    points: list[PointSummary]
    records: list[Record]                 # every record of the task's phases
    phases: list[StoredPhase]
    effs: dict[str, PointEfficiency] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    telemetry: list[TelemetryRow] = field(default_factory=list)
    series: list = field(default_factory=list)    # results.contract.SeriesPoint (OSU, IMB)
    interval_s: float | None = None       # the plan's sampling interval for the task
    # every figure of each point (analysis/values.py): what the figures draw, as the tables
    values: dict[str, dict[str, list[Value]]] = field(default_factory=dict)

    def ok(self) -> list[Record]:
        return [r for r in self.records if r.status == "ok"]

    def shown_phase(self) -> int | None:
        """The phase the per-phase figures show: most workers, then the median window."""
        by_phase: dict[int, list[Record]] = {}
        for r in self.ok():
            by_phase.setdefault(r.phase, []).append(r)
        if not by_phase:
            return None
        most = max(len(rs) for rs in by_phase.values())
        cands = sorted((max(r.end_ns for r in rs) - min(r.start_ns for r in rs), i)
                       for i, rs in by_phase.items() if len(rs) == most)
        return cands[(len(cands) - 1) // 2][1]


def tasks(store: Store, run: RunInfo, data: tuple = ()) -> list[TaskData]:
    """One TaskData per task of the run, in plan order; `data`: (summaries, records, phases,
    effs, values) already read and summarised (report/build.py), else read here."""
    if not data:
        records = store.records(run.run_id)
        phases = store.phases(run.run_id)
        nodes = store.nodes(run.run_id)
        summaries = summarize(records, phases)
        effs = evaluate(summaries, records, head.run_peaks(run, nodes) or NodePeaks(Peaks()))
        data = (summaries, records, phases, effs)
    summaries, records, phases, effs, *rest = data
    return split(summaries, records, phases, effs, store.samples(run.run_id),
                 store.telemetry(run.run_id), store.series(run.run_id), plan_raw=run.plan_raw,
                 values=rest[0] if rest else None)


def split(summaries: list[PointSummary], records: list[Record], phases: list[StoredPhase],
          effs: dict[str, PointEfficiency] | None = None, samples: list[Sample] | None = None,
          telemetry: list[TelemetryRow] | None = None, series: list | None = None,
          plan_raw: dict | None = None, values: dict | None = None
          ) -> list[TaskData]:
    """Group a run's data by task (also for tests that build the lists themselves);
    `values`: every point's figures (analysis/values.py), else made here."""
    if values is None:
        spreads = metric_spreads(records, phases)
        values = {s.point: point_values(s, spreads.get(s.point)) for s in summaries}
    out: dict[str, TaskData] = {}
    for s in summaries:
        if s.task not in out:
            out[s.task] = TaskData(s.task, s.kernel, [], [], [], effs or {},
                                   interval_s=planned_interval(plan_raw or {}, s.task),
                                   values=values)
        out[s.task].points.append(s)
    task_of: dict[int, str] = {}
    for p in phases:
        if p.task in out:
            out[p.task].phases.append(p)
            task_of[p.index] = p.task
    for r in records:
        if r.task in out:
            out[r.task].records.append(r)
            task_of.setdefault(r.phase, r.task)
    for s in samples or []:
        t = task_of.get(s.phase_id)
        if t in out:
            out[t].samples.append(s)
    for pt in series or []:
        t = task_of.get(pt.phase_id)
        if t in out:
            out[t].series.append(pt)
    before = _next_phase(phases)
    for row in telemetry or []:
        t = task_of.get(row.phase_id) if row.phase_id is not None else before(row.t_ns)
        if t in out:
            out[t].telemetry.append(row)
    return list(out.values())


def _next_phase(phases: list[StoredPhase]) -> Callable[[int], str | None]:
    """The task of the first phase whose T0 is at or after an instant: a telemetry row taken
    between phases (node/telemetry.py) is its prepare's, shown in that task's figure."""
    starts = sorted((p.t0_ns, p.task) for p in phases if p.t0_ns is not None)
    t0s = [t for t, _ in starts]

    def task(t_ns: int) -> str | None:
        i = bisect_left(t0s, t_ns)
        return starts[i][1] if i < len(starts) else None
    return task
