"""A report's views: each run read and summarised once (from its phases' stored aggregates:
analysis/run_read.py, never every record), then its compact tables
(headline.py), full tables (tables.py), comparisons and references (comparison.py),
hints (findings.py) and its numbers by machine (summary.py) made from that one reading."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..analysis import PointSummary
from ..analysis.efficiency import NodePeaks, PointEfficiency, evaluate_slots
from ..analysis.run_read import RunRead
from ..analysis.run_read import read as read_aggregates
from ..inventory.peaks import Peaks
from ..results.contract import RunInfo, StoredNode, StoredPhase
from ..results.schema import AGGREGATED
from ..results.store import Store
from . import header as head
from .comparison import run_tables
from .facts import attach_facts
from .findings import attach_hints
from .headline import NOTE, Values, headline_table, known_figures, task_values
from .tables import task_table
from .time_line import time_rows
from .view import LEGEND, RunView


@dataclass
class RunData:
    """One run as read from the store and summarised, once per report."""
    info: RunInfo
    read: RunRead                 # its phases' aggregates (never its records)
    phases: list[StoredPhase]
    nodes: list[StoredNode]
    summaries: list[PointSummary]
    effs: dict[str, PointEfficiency]
    peaks: object
    values: Values

    def by_task(self) -> dict[str, list[PointSummary]]:
        out: dict[str, list[PointSummary]] = {}
        for s in self.summaries:
            out.setdefault(s.task, []).append(s)
        return out


def read_run(store: Store, run: RunInfo) -> RunData:
    """Read and summarise one run (every figure of every point, efficiencies) from its
    phases' aggregates."""
    read = read_aggregates(store, run.run_id)
    nodes = store.nodes(run.run_id)
    peaks = head.run_peaks(run, nodes)
    effs = evaluate_slots(read.summaries, read.slots(), peaks or NodePeaks(Peaks()))
    values = task_values(read.summaries, read.spreads)
    return RunData(run, read, read.phases, nodes, read.summaries, effs, peaks, values)


def run_view(store: Store, data: RunData, figures: list[str] | None = None,
             all_columns: bool = False, keep: bool = False) -> RunView:
    """Everything the report shows for one run: per task the compact headline table (the
    figures named in `figures` instead of the headline), or every figure (`all_columns`)."""
    run = data.info
    by_task = data.by_task()
    if all_columns:
        tables = [task_table(t, pts, data.values, data.effs) for t, pts in by_task.items()]
    else:
        tables = [headline_table(t, pts, data.values, data.effs, figures)
                  for t, pts in by_task.items()]
    warnings = store.warnings(run.run_id)
    view = RunView(title=f"{run.name} - run {run.run_id}",
                   header=run_header(data),
                   notes=head.notes(run, data.nodes) + _floor_notes(data) + _schema_note(store),
                   warnings=head.warning_lines(warnings),
                   tables=tables + run_tables(run, data.read),
                   run_id=run.run_id, legend=LEGEND if all_columns else f"{LEGEND} {NOTE}.")
    attach_hints(view, store, run, data.summaries, data.read, data.nodes, data.effs)
    attach_facts(view, by_task)
    if keep:    # the html page: every figure's table and the figures too, from one reading
        view.full = {t: task_table(t, pts, data.values, data.effs)
                     for t, pts in by_task.items()}
        view.data = (data.summaries, data.read, data.phases, data.effs, data.values)
    return view


def run_header(data: RunData) -> list[tuple[str, str]]:
    """The run's header rows (header.py), and where its time went (time_line.py)."""
    return (head.header(data.info, data.nodes, data.peaks)
            + time_rows(data.info, data.phases))


def _floor_notes(data: RunData) -> list[str]:
    """Skew and lateness judged against the nodes' noise floor; late starts counted."""
    figs = [(s, f) for s in data.summaries for f in s.phase_figures]
    late = data.read.lateness()
    return head.floor_notes(data.info, data.nodes,
                            [f.skew_ns for s, f in figs if f.skew_ns is not None and s.workers > 1],
                            late.quantile(99) if late.n else None, data.read.late())


def _schema_note(store: Store) -> list[str]:
    """An older file is aggregated in a private copy at every read (a reader never changes
    it): say so, and how to make it once."""
    v = store.migrated_from
    if v is None or v >= AGGREGATED:
        return []
    return [f"results schema {v}: this file stores no per-phase aggregates, so every record "
            "was read and aggregated in memory for this report; a writer (a run into this "
            "directory) migrates it once, after which reports read its aggregates"]


def check_figures(runs: list[RunData], figures: list[str]) -> None:
    """ValueError naming each figure no task of the runs has, and the ones they have."""
    known: list[str] = []
    for r in runs:
        for pts in r.by_task().values():
            known += [n for n in known_figures(pts, r.effs) if n not in known]
    unknown = [f for f in figures if f not in known]
    if unknown:
        raise ValueError(f"--metrics: no task of this run has {', '.join(map(repr, unknown))}; "
                         f"figures here: {', '.join(known)}")


def chosen_runs(store: Store, run_id: str | None, all_runs: bool) -> list[RunInfo]:
    """The latest run of the store, the run named, or every run (oldest first); an unknown
    run_id raises KeyError naming the runs there are."""
    if run_id is not None:
        return [store.run(run_id)]
    runs = store.runs()
    return runs if all_runs else runs[-1:]


def build(store_or_dir: Store | str | os.PathLike, run_id: str | None = None,
          all_runs: bool = False, figures: list[str] | None = None,
          all_columns: bool = False, keep: bool = False) -> list[RunView]:
    """Views of the latest run of the store, of the run named, or of every run (oldest first).

    An unknown run_id raises KeyError naming the runs there are.
    """
    store = store_or_dir if isinstance(store_or_dir, Store) else Store(store_or_dir, readonly=True)
    try:
        data = [read_run(store, r) for r in chosen_runs(store, run_id, all_runs)]
        return views_of(store, data, figures, all_columns, keep, all_runs)
    finally:
        if store is not store_or_dir:
            store.close()


def views_of(store: Store, data: list[RunData], figures: list[str] | None = None,
             all_columns: bool = False, keep: bool = False, all_runs: bool = False
             ) -> list[RunView]:
    """The views of runs already read (read_run); ValueError for a figure none of them has."""
    if figures:
        check_figures(data, figures)
    views = [run_view(store, d, figures, all_columns, keep) for d in data]
    runs = store.runs()
    if len(runs) > 1 and not all_runs:
        for v in views:
            v.notes.append(f"this directory holds {len(runs)} runs: "
                           + ", ".join(r.run_id for r in runs))
    return views
