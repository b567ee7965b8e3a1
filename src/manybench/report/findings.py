"""Hints for a report: gathers what analysis/hints.py needs from the store and attaches each
finding to its task's table (or to the run when it names no task)."""
from __future__ import annotations

from typing import Callable, Sequence

from ..status import Status
from ..analysis import hints as H
from ..analysis.efficiency import PointEfficiency
from ..analysis.points import PointSummary
from ..analysis.run_read import RunRead
from ..analysis.values import Value
from ..kernels import kernel
from ..results.contract import RunInfo, StoredNode
from ..results.store import Store
from .colunits import column_unit, num
from .view import RunView


def column_writer(column: Sequence[Value]) -> tuple[str, Callable[[float], str]]:
    """How a task's table writes a figure, given the values of its column (every point of
    the task): the column's unit and its numbers (report/colunits.py), for a hint's
    evidence to read as the table beside it."""
    unit, div = column_unit(column[0].unit, [v.median for v in column])
    return unit, lambda x: num(x / div)


def _declared_metrics(run: RunInfo) -> dict[str, list[str]]:
    tasks = (run.plan_raw or {}).get("task") or []
    return {t["name"]: list(t["metrics"]) for t in tasks
            if isinstance(t, dict) and isinstance(t.get("metrics"), dict) and "name" in t}


def _memory(nodes: list[StoredNode]) -> dict[str, float]:
    out = {}
    for n in nodes:
        inv = n.inventory or {}
        mem = inv.get("memory_available") or inv.get("memory_total")
        if isinstance(mem, (int, float)) and mem > 0:
            out[n.name] = float(mem)
    return out


def run_hints(store: Store, run: RunInfo, points: list[PointSummary], read: RunRead,
              nodes: list[StoredNode], effs: dict[str, PointEfficiency]) -> list[H.Hint]:
    """Every finding of one run, in the order a reader should see them, from its phases'
    aggregates (analysis/run_read.py): records are read only where a hint names them (those
    that missed a metric, failed ones, each ok slot's time for the stragglers). Metrics that
    matched nothing are judged on the records, which say which missed (the run's
    missing-metric warnings count failed records too, whose output holds no result)."""
    ok: dict[str, int] = {}
    present: dict[tuple[str, str], int] = {}
    per_node: dict[tuple[str, int, str], float] = {}
    for a in read.task_parts():
        task = a.info.task
        ok[task] = ok.get(task, 0) + a.status.get(Status.OK, 0)
        for n, c in a.present.items():
            present[(task, n)] = present.get((task, n), 0) + c
        if kernel(a.info.kernel).uses_dir:
            for node, (_, b, _) in a.nodes.items():
                if b:
                    per_node[(task, a.info.index, node)] = float(b)
    found = (H.missing_metric_hints(_declared_metrics(run), read.said_missing(store, run.run_id),
                                    ok, present)
             + H.stderr_failures(read.failed_records) + H.flags(points)
             + H.memory_hints(per_node, _memory(nodes)) + H.at_peak(points, effs)
             + H.scaling(points, column_writer)
             + H.straggler_hints(read.slot_times(store, run.run_id)) + H.cpu_bound(points))
    # an older results.db is migrated when opened (results/schema.py): its telemetry is empty
    phase_task = {idx: ps[-1].info.task for idx, ps in read.parts.items() if ps and ps[0].records}
    return found + H.system_cpu(phase_task, store.telemetry_rows(run.run_id))


def attach_hints(view: RunView, store: Store, run: RunInfo, points: list[PointSummary],
                 read: RunRead, nodes: list[StoredNode],
                 effs: dict[str, PointEfficiency]) -> None:
    """Put each hint's line under its task's table; hints of no shown task go to the run."""
    tables = {t.task: t for t in view.tables if t.task}
    for h in run_hints(store, run, points, read, nodes, effs):
        t = tables.get(h.task)
        (t.hints if t is not None else view.hints).append(h.line())
