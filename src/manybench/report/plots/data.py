"""What the figures of one task are drawn from, gathered once per run from the store.

A stored run's figures are drawn from its phases' aggregates (analysis/run_read.py); a figure
that shows records (a Gantt, each slot's time, a phase's throughput) reads one phase's, the
one it shows. Samples come from `Store.samples`; telemetry from `Store.telemetry_rows`, a
task's as its figure draws it (telemetry_rows.py: rows that do not grow with the run). The
store migrates an older results.db, whose tables are then empty: lists of
results.contract.Sample / TelemetryRow; the figures that need them are left out where they
are empty.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from ...status import OK_TEXT, Status
from ...analysis import PointSummary
from ...analysis.aggregates import PartAgg
from ...analysis.efficiency import NodePeaks, PointEfficiency, evaluate_slots
from ...analysis.run_read import RunRead
from ...analysis.run_read import read as read_aggregates
from ...analysis.values import Value, metric_spreads, point_values
from ...model import GROUP_KERNEL
from ...inventory.peaks import Peaks
from ...analysis.throughput import planned_interval
from ...node.wire_types import TelemetryRow
from ...record import Record
from ...results.contract import RunInfo, Sample, StoredPhase
from ...results.store import Store
from .. import header as head
from .telemetry_rows import by_task as rows_by_task


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
    telemetry_merged: int = 1     # the most stored rows merged into one of telemetry (1: none)
    series: list = field(default_factory=list)    # results.contract.SeriesPoint (OSU, IMB)
    interval_s: float | None = None       # the plan's sampling interval for the task
    # every figure of each point (analysis/values.py): what the figures draw, as the tables
    values: dict[str, dict[str, list[Value]]] = field(default_factory=dict)
    # phase index -> the task's part of it (its records' aggregates), and one phase's records
    parts: dict[int, PartAgg] = field(default_factory=dict)
    loader: Callable[[int], list[Record]] | None = None
    # the store's samples of a phase, read when a figure shows it (a run's samples outnumber
    # its records: never all held), and how many each of the task's phases has
    sample_loader: Callable[[int], list[Sample]] | None = None
    sampled: dict[int, int] = field(default_factory=dict)

    def sample_counts(self) -> dict[int, int]:
        """phase -> how many progress samples it has, for the phases that have some."""
        if self.sample_loader is None:
            counts: dict[int, int] = {}
            for s in self.samples:
                counts[s.phase_id] = counts.get(s.phase_id, 0) + 1
            return counts
        return self.sampled

    def phase_samples(self, phase: int) -> list[Sample]:
        """One phase's samples, by rank and time."""
        if self.sample_loader is None:
            return [s for s in self.samples if s.phase_id == phase]
        return self.sample_loader(phase)

    def ok(self) -> list[Record]:
        """Every ok record of the task: the records given (tests), else read from the store,
        a phase at a time (a figure draws every slot only when they are few: per_slot)."""
        if self.records or self.loader is None:
            return [r for r in self.records if r.status == OK_TEXT]
        return [r for i in sorted(self.parts) for r in self.phase_ok(i)]

    def ok_records(self) -> int:
        """How many ok records the task has (without reading them)."""
        if self.records or self.loader is None:
            return sum(r.status == OK_TEXT for r in self.records)
        return sum(a.status.get(Status.OK, 0) for a in self.parts.values())

    def phase_ok(self, phase: int) -> list[Record]:
        """The task's ok records of one phase, by node and slot."""
        if self.records or self.loader is None:
            return [r for r in self.records if r.phase == phase and r.status == OK_TEXT]
        return [r for r in self.loader(phase) if r.task == self.task and r.status == OK_TEXT]

    def phase_records(self, phase: int) -> list[Record]:
        """Every record of one of the task's phases."""
        if self.records or self.loader is None:
            return [r for r in self.records if r.phase == phase]
        return self.loader(phase)

    def windows(self) -> list[tuple[int, int]]:
        """Each phase's (first start, last end) of its ok records."""
        if self.records or self.loader is None:
            from ...analysis.phase_figures import ok_window   # noqa: PLC0415
            by_phase: dict[int, list[Record]] = {}
            for r in self.records:
                by_phase.setdefault(r.phase, []).append(r)
            got = [ok_window([r.start_ns for r in rs], [r.end_ns for r in rs],
                             [r.status for r in rs]) for rs in by_phase.values()]
            return [w for w in got if w is not None]
        return [(a.figures.first_start_ns, a.figures.last_end_ns) for a in self.parts.values()
                if a.figures.ok]

    def shown_phase(self) -> int | None:
        """The phase the per-phase figures show: most workers, then the median window."""
        if self.records or self.loader is None:
            by_phase: dict[int, list[Record]] = {}
            for r in self.ok():
                by_phase.setdefault(r.phase, []).append(r)
            sizes = {i: (len(rs), max(r.end_ns for r in rs) - min(r.start_ns for r in rs))
                     for i, rs in by_phase.items()}
        else:
            sizes = {i: (a.figures.ok, a.figures.window_ns) for i, a in self.parts.items()
                     if a.figures.ok}
        if not sizes:
            return None
        most = max(n for n, _ in sizes.values())
        cands = sorted((w, i) for i, (n, w) in sizes.items() if n == most)
        return cands[(len(cands) - 1) // 2][1]


def tasks(store: Store, run: RunInfo, data: tuple = ()) -> list[TaskData]:
    """One TaskData per task of the run, in plan order; `data`: (summaries, RunRead, phases,
    effs, values) already read and summarised (report/build.py), else read here."""
    if not data:
        read = read_aggregates(store, run.run_id)
        nodes = store.nodes(run.run_id)
        effs = evaluate_slots(read.summaries, read.slots(),
                              head.run_peaks(run, nodes) or NodePeaks(Peaks()))
        data = (read.summaries, read, read.phases, effs)
    summaries, read, phases, effs, *rest = data
    values = rest[0] if rest else {s.point: point_values(s, read.spreads.get(s.point))
                                   for s in summaries}
    out = split(summaries, [], phases, effs, None, _StoredTelemetry(store, run.run_id),
                store.series(run.run_id), plan_raw=run.plan_raw, values=values)
    _attach(out, read, _PhaseCache(store, run.run_id))
    counts = store.sample_counts(run.run_id)
    for d in out:
        d.sample_loader = lambda i, run_id=run.run_id: store.samples(run_id, i)
        d.sampled = {p.index: counts[p.index] for p in d.phases if p.index in counts}
    return out


class _StoredTelemetry:
    """A run's telemetry rows, read from the store, a batch at a time, each time iterated
    (telemetry_rows.by_task reads them twice, and holds what a figure draws)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id

    def __iter__(self) -> Iterator[TelemetryRow]:
        return self.store.telemetry_rows(self.run_id)


class _PhaseCache:
    """One phase's records read from the store, the last one kept (the figures of a task
    show one phase: each asks for it in turn)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.last: tuple[int, list[Record]] | None = None

    def __call__(self, phase: int) -> list[Record]:
        if self.last is None or self.last[0] != phase:
            self.last = (phase, self.store.phase_records_of(self.run_id, phase))
        return self.last[1]


def _attach(tasks_: list[TaskData], read: RunRead, loader: Callable[[int], list[Record]]
            ) -> None:
    """Each task's parts of the run's phases (a group's own part is no task's: its tasks'
    parts are), and the reader of a phase's records."""
    by_task = {d.task: d for d in tasks_}
    for idx, ps in read.parts.items():
        for a in ps:
            d = by_task.get(a.info.task)
            if d is not None and a.info.kernel != GROUP_KERNEL:
                d.parts[idx] = a
    for d in tasks_:
        d.loader = loader


def split(summaries: list[PointSummary], records: list[Record], phases: list[StoredPhase],
          effs: dict[str, PointEfficiency] | None = None, samples: list[Sample] | None = None,
          telemetry: Iterable[TelemetryRow] | None = None, series: list | None = None,
          plan_raw: dict | None = None, values: dict | None = None
          ) -> list[TaskData]:
    """Group a run's data by task (also for tests that build the lists themselves);
    `values`: every point's figures (analysis/values.py), else made here; `telemetry` is
    iterated twice (telemetry_rows.by_task)."""
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

    def shown_in(row: TelemetryRow) -> str | None:
        t = task_of.get(row.phase_id) if row.phase_id is not None else before(row.t_ns)
        return t if t in out else None
    drawn, merged = rows_by_task(telemetry or [], shown_in)
    for t, rows in drawn.items():
        out[t].telemetry, out[t].telemetry_merged = rows, merged[t]
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
