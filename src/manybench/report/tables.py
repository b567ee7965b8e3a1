"""What a report shows, as plain strings: run header, one table per task, errors, notes.

terminal.py and html.py only lay these out, so both show the same figures under the same
names (docs/definitions.md: lateness, skew, sync overhead, aggregate bandwidth).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from ..analysis import PointSummary, summarize
from ..analysis.efficiency import WRONG_PEAK, NodePeaks, PointEfficiency, evaluate, unit
from ..inventory.peaks import Peaks
from ..kernels import kernel
from ..kernels.binding import parse_cpulist
from ..model import GROUP_KERNEL
from ..results.contract import RunInfo
from ..results.store import Store
from ..units import format_duration, format_rate, format_size
from . import header as head
from .formats import (DASH, count, dist, ns, param_formatter, rate_spread, secs, spread,
                      swept)

MAX_ERRORS = 5  # error lines shown per table; the rest are counted
LEGEND = ("lateness = start - T0 per slot; skew = max(start) - min(start) per phase; "
          "sync overhead = last end - first start of a null phase; aggregate bandwidth = "
          "sum(bytes) / (last end - first start); stonewall (estimated) = the window in which "
          "every slot ran (bytes in it estimated proportionally). Percentiles and medians are "
          "nearest-rank over records (lateness, per-slot time) or phases (skew, sync overhead, "
          "bandwidth).")


@dataclass
class Table:
    title: str
    columns: list[str]      # a "\n" marks where a terminal header may break
    rows: list[list[str]]
    keys: int = 0           # leading columns that identify a row (repeated when split)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # compact tables (report/headline.py): columns to drop, least important first, when the
    # terminal is narrow (else a wide table is split); each column's figure name
    drop: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    short_rows: list[list[str]] = field(default_factory=list)   # medians only, for narrow
    hints: list[str] = field(default_factory=list)     # analysis/hints.py, with evidence


@dataclass
class RunView:
    title: str
    header: list[tuple[str, str]]
    notes: list[str]
    tables: list[Table]
    warnings: list[str] = field(default_factory=list)
    legend: str = LEGEND
    hints: list[str] = field(default_factory=list)     # findings not tied to one task
    run_id: str = ""
    full: dict[str, Table] = field(default_factory=dict)   # per task, every figure (html)
    data: tuple = ()   # (summaries, records, phases, effs): what html's figures draw from


def _ok_cell(s: PointSummary) -> str:
    cell = f"{s.ok}/{s.records}"
    bad = [f"{n} {name}" for name, n in (("error", s.error), ("timeout", s.timeout),
                                          ("lost", s.lost)) if n]
    return cell + (f" ({', '.join(bad)})" if bad else "")


def _errors(points: list[PointSummary]) -> list[str]:
    failed = [r for s in points for r in s.failed]
    lines = []
    for r in failed[:MAX_ERRORS]:
        msg = (r.error or "").strip().splitlines()
        lines.append(f"phase {r.phase} {r.node}/slot {r.slot}: {r.status}"
                     + (f": {msg[0][:200]}" if msg else ""))
    if len(failed) > MAX_ERRORS:
        lines.append(f"... and {len(failed) - MAX_ERRORS} more failed records")
    return lines


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _efficiency_columns(points: list[PointSummary], effs: dict[str, PointEfficiency]
                        ) -> tuple[list[tuple[str, Callable[[PointSummary], str]]], list[str]]:
    """The efficiency column (only when some point has a peak) and the share column (only
    when some point ran on several nodes and has a one-node peer), with their notes."""
    pe = [effs[s.point] for s in points if s.point in effs]
    cols: list[tuple[str, Callable[[PointSummary], str]]] = []
    notes: list[str] = []
    rules = list(dict.fromkeys(e.efficiency.rule for e in pe if e.efficiency))
    if rules:
        def eff_cell(s: PointSummary) -> str:
            e = effs.get(s.point)
            if e is None or e.efficiency is None:
                return DASH
            x = e.efficiency
            if x.above_peak:
                return f"wrong peak ({count(x.measured)} > {count(x.peak)} {unit(x.metric)})"
            return f"{_pct(x.ratio)} ({count(x.measured)} of {count(x.peak)} {unit(x.metric)})"
        cols.append(("efficiency\nof peak", eff_cell))
        notes += [f"efficiency = {r}" for r in rules]
        if any(e.efficiency.above_peak for e in pe if e.efficiency):
            notes.append(WRONG_PEAK)
    shares = list(dict.fromkeys(e.share.metric for e in pe if e.share))
    if shares:
        def share_cell(s: PointSummary) -> str:
            e = effs.get(s.point)
            if e is None or e.share is None:
                return DASH
            return f"{_pct(e.share.ratio)} of {e.share.nodes} x {count(e.share.single)}"
        cols.append(("share of\nN x single-node", share_cell))
        notes.append(f"share of N x single-node = {', '.join(shares)} at N nodes / (N x the "
                     "same point on one node with as many workers per node)")
    if any(e.nodes and e.nodes > 1 for e in pe) and (rules or shares):
        notes.append("peaks are each node's own (its inventory, collected on the node)")
    return cols, notes


# metrics shown in columns of their own, not as plain metric columns
OWN_COLUMNS = ("cached_fraction", "cache_dropped", "stonewall_s", "stonewall_bytes",
                 "stonewall_blocks", "wear_out_blocks", "reorder_shift")
CACHED = 0.5    # a point whose median slot had this share of its file cached read memory
CACHE_NOTE = ("reads from: \"memory\" when at least half of the file's pages were in the page "
              "cache at T0 (cache = \"keep\", or a file system that keeps files in memory, "
              "such as tmpfs): those figures are memory's, not the device's")


def _cache_columns(points: list[PointSummary]) -> tuple[list[tuple[str, Callable]], list[str]]:
    """Where a read kernel's bytes came from, as measured at T0 (kernels/pagecache.py)."""
    if not any("cached_fraction" in s.metrics for s in points):
        return [], []

    def cell(s: PointSummary) -> str:
        f = s.metrics.get("cached_fraction")
        if f is None:
            return DASH
        where = "memory" if f >= CACHED else "device"
        return f"{where} ({f * 100:.0f}% cached)"
    return [("reads from\n(page cache)", cell)], [CACHE_NOTE]


STONEWALL_NOTE = ("stonewall (wear_out): the bytes every slot had written when the stonewall "
                  "was agreed / the stonewall time, measured as IOR does; blocks = the fewest "
                  "and most a slot had written by then (IO500's pairs accessed min / max); "
                  "each slot then wrote up to the most")


def _stonewall_cell(s: PointSummary) -> str:
    if not s.stonewall_bandwidth:
        return DASH
    cell = format_rate(s.stonewall_bandwidth.median)
    if s.stonewall_blocks:
        cell += f" (blocks {s.stonewall_blocks[0]}-{s.stonewall_blocks[1]})"
    elif not s.stonewall_measured:
        cell += " (estimated)"
    return cell


GROUP_NOTE = ("a [[concurrent]] group: its tasks ran in the same phases on their own slots "
              "from one T0; these are the whole phase's figures (every slot's bytes and ops "
              "over the phase's window); each task's own are in its table")
CPU_BOUND_NOTE = ("cpu use = cpu time / wall time of the work (1.00 = one cpu busy throughout), "
                  "of the cpus it was allowed (read back from /proc); CPU-BOUND AT ITS PIN: it "
                  "kept about all of them busy, so its pin may be what limits it (a task with "
                  "more threads than cpus runs them in turn): try placement cpus = N or "
                  "another bind")
WRAP_NOTE = ("wrap start-up = from launching the wrap (container) to the kernel starting "
             "inside it, median per slot; outside the timed window, never in the figures")


def _cpu_columns(points: list[PointSummary]) -> tuple[list[tuple[str, Callable]], list[str]]:
    """Cpu use of the work against the cpus it may use; the wrap's start-up."""
    cols: list[tuple[str, Callable]] = []
    notes: list[str] = []
    if any(s.cpu_util is not None for s in points):
        def cell(s: PointSummary) -> str:
            if s.cpu_util is None:
                return DASH
            n = len(parse_cpulist(s.cpus_allowed)) if s.cpus_allowed else 0
            text = f"{s.cpu_util:.2f}" + (f" of {n} cpu{'s' if n != 1 else ''}" if n else "")
            return text + (" CPU-BOUND AT ITS PIN" if s.cpu_bound * 2 > s.ok else "")
        cols.append(("cpu use\n(of allowed)", cell))
        notes.append(CPU_BOUND_NOTE)
    if any(s.wrap_startup_s is not None for s in points):
        cols.append(("wrap\nstart-up", lambda s: DASH if s.wrap_startup_s is None
                     else secs(s.wrap_startup_s)))
        notes.append(WRAP_NOTE)
    return cols, notes


def _metric_columns(points: list[PointSummary]) -> list[tuple[str, Callable]]:
    """One column per named metric the records carry (median over the point's slots)."""
    names: list[str] = []
    for s in points:
        names += [n for n in s.metrics if n not in names and n not in OWN_COLUMNS]
    return [(f"{n}\n(med)", lambda s, n=n: count(s.metrics.get(n))) for n in names]


def task_table(task: str, points: list[PointSummary],
               effs: dict[str, PointEfficiency] | None = None) -> Table:
    """One task's table; its columns follow the kernel's traits (no work: sync figures; a
    child process: elapsed and exit statuses; else throughput);
    efficiency and share columns only where a point has a peak or ran on several nodes."""
    kernel_name = points[0].kernel
    traits = kernel(kernel_name)
    varying = swept(points)
    fmts = {k: param_formatter(kernel_name, k) for k in varying}
    with_variant = any(s.variant for s in points)
    cols: list[tuple[str, Callable[[PointSummary], str]]] = []
    if with_variant:
        cols.append(("variant", lambda s: s.variant or DASH))
    cols.append(("workers", lambda s: str(s.workers)))
    for k in varying:
        cols.append((k, lambda s, k=k: fmts[k](s.params[k]) if k in s.params else DASH))
    keys = len(cols)
    cols += [("phases", lambda s: str(s.phases)), ("ok", _ok_cell)]
    if any(s.late.late_phases for s in points):
        cols.append(("late starts\n(phases)", lambda s: s.late.cell()))
    cache_notes: list[str] = []

    if traits.sync_only:
        cols += [("sync overhead\nmed / p99 / max", lambda s: dist(s.sync_overhead, ns)),
                 ("skew\nmed / p99 / max", lambda s: dist(s.skew, ns)),
                 ("lateness\nmed / p99 / max", lambda s: dist(s.lateness, ns))]
    elif traits.runs_child:
        cols += [("elapsed\nmin / med / max", lambda s: spread(s.slot_elapsed, secs)),
                 ("exit statuses", lambda s: ", ".join(
                     f"{code}x{n}" for code, n in sorted(s.exit_statuses.items())) or DASH)]
        cols += _metric_columns(points)
        cols += [("skew\nmed / max", lambda s: dist(s.skew, ns, p99=False)),
                 ("lateness\nmed / max", lambda s: dist(s.lateness, ns, p99=False))]
    else:
        has_bytes = any(s.bandwidth for s in points)
        cols.append(("ops/phase", lambda s: count(s.ops)))
        if has_bytes:
            cols += [("bytes/phase", lambda s: DASH if s.bytes is None else format_size(s.bytes)),
                     ("aggregate bandwidth\nmed (min-max)", lambda s: rate_spread(s.bandwidth))]
        cols.append(("aggregate\nops/s med", lambda s: count(s.ops_rate.median)
                     if s.ops_rate else DASH))
        if any(s.stonewall_bandwidth for s in points):
            cols.append(("stonewall bandwidth\nmed", _stonewall_cell))
            if any(s.stonewall_measured for s in points):
                cache_notes.append(STONEWALL_NOTE)
        cols.append(("per-slot time\nmin / med / max", lambda s: spread(s.slot_elapsed, secs)))
        if any(s.latency_us for s in points):
            cols.append(("latency\np50 / p99", lambda s: " / ".join(
                DASH if s.latency_us.get(q) is None else format_duration(s.latency_us[q] / 1e6)
                for q in ("p50", "p99"))))
        cache_cols, cache_notes = _cache_columns(points)
        cols += cache_cols
        cols += _metric_columns(points)      # the kernel's own figures (triad_mb_s, gflops ...)
        cols.append(("skew\nmed / max", lambda s: dist(s.skew, ns, p99=False)))

    notes = list(cache_notes)
    if kernel_name == GROUP_KERNEL:
        notes.append(GROUP_NOTE)
    cpu_cols, cpu_notes = _cpu_columns(points)
    if cpu_cols:   # before skew and lateness, with the figures
        at = next((i for i, (c, _) in enumerate(cols) if i >= keys and c.startswith("skew")),
                  len(cols))
        cols[at:at] = cpu_cols
        notes += cpu_notes
    eff_cols, eff_notes = _efficiency_columns(points, effs or {})
    if eff_cols:   # before skew and lateness: they belong with the figures
        at = next((i for i, (c, _) in enumerate(cols) if i >= keys and c.startswith("skew")),
                  len(cols))
        cols[at:at] = eff_cols
        notes += eff_notes
    clock = [s.clock_error_ns for s in points if s.clock_error_ns is not None]
    if clock and max(clock) > 0:   # 0: every slot read the coordinator's own clock
        notes.append(f"clock offset error bound: up to {ns(max(clock))}")
    if any(s.latency_source == "metrics" for s in points):
        notes.append("latency: median over slots of each slot's percentile (no histograms stored)")
    return Table(title=f"{task} ({kernel_name})", columns=[c for c, _ in cols],
                 rows=[[f(s) for _, f in cols] for s in points], keys=keys, notes=notes,
                 errors=_errors(points))


def run_view(store: Store, run: RunInfo, figures: list[str] | None = None,
             all_columns: bool = False, keep: bool = False) -> RunView:
    """Everything the report shows for one run: per task the compact headline table (the
    figures named in `figures` instead of the headline), or every figure (`all_columns`)."""
    from .comparison import run_tables     # it imports Table from here
    from .headline import NOTE, headline_table, metric_spreads
    from .findings import attach_hints
    records = store.records(run.run_id)
    nodes = store.nodes(run.run_id)
    phases = store.phases(run.run_id)
    summaries = summarize(records, phases)
    peaks = head.run_peaks(run, nodes)
    effs = evaluate(summaries, records, peaks or NodePeaks(Peaks()))
    by_task: dict[str, list[PointSummary]] = {}
    for s in summaries:
        by_task.setdefault(s.task, []).append(s)
    if all_columns:
        tables = [task_table(t, pts, effs) for t, pts in by_task.items()]
    else:
        spreads = metric_spreads(records, phases)
        tables = [headline_table(t, pts, spreads, effs, figures) for t, pts in by_task.items()]
    warnings = store.warnings(run.run_id)
    view = RunView(title=f"{run.name} - run {run.run_id}", header=head.header(run, nodes, peaks),
                   notes=head.notes(run, nodes) + head.floor_notes(
                       run, nodes, [f.skew_ns for s in summaries for f in s.phase_figures
                                    if f.skew_ns is not None and s.workers > 1],
                       [x for s in summaries for f in s.phase_figures for x in f.lateness_ns],
                       records),
                   warnings=head.warning_lines(warnings),
                   tables=tables + run_tables(run, summaries, records, phases),  # variants, [reference]
                   run_id=run.run_id, legend=LEGEND if all_columns else f"{LEGEND} {NOTE}.")
    attach_hints(view, store, run, summaries, records, nodes, effs, warnings)
    if keep:    # the html page: every figure's table and the figures too, from one reading
        view.full = {t: task_table(t, pts, effs) for t, pts in by_task.items()}
        view.data = (summaries, records, phases, effs)
    return view


def _check_figures(store: Store, runs: list[RunInfo], figures: list[str]) -> None:
    """ValueError naming each figure no task of the runs has, and the ones they have."""
    from .headline import known_figures
    known: list[str] = []
    for r in runs:
        summaries = summarize(store.records(r.run_id), store.phases(r.run_id))
        by_task: dict[str, list[PointSummary]] = {}
        for s in summaries:
            by_task.setdefault(s.task, []).append(s)
        for pts in by_task.values():
            known += [n for n in known_figures(pts) if n not in known]
    unknown = [f for f in figures if f not in known]
    if unknown:
        raise ValueError(f"--metrics: no task of this run has {', '.join(map(repr, unknown))}; "
                         f"figures here: {', '.join(known)}")


def build(store_or_dir: Store | str | os.PathLike, run_id: str | None = None,
          all_runs: bool = False, figures: list[str] | None = None,
          all_columns: bool = False, keep: bool = False) -> list[RunView]:
    """Views of the latest run of the store, of the run named, or of every run (oldest first).

    An unknown run_id raises KeyError naming the runs there are.
    """
    store = store_or_dir if isinstance(store_or_dir, Store) else Store(store_or_dir, readonly=True)
    try:
        runs = store.runs()
        if run_id is not None:
            chosen = [store.run(run_id)]
        else:
            chosen = runs if all_runs else runs[-1:]
        views = [run_view(store, r, figures, all_columns, keep) for r in chosen]
        if figures:
            _check_figures(store, chosen, figures)
        if len(runs) > 1 and not all_runs:
            for v in views:
                v.notes.append(f"this directory holds {len(runs)} runs: "
                               + ", ".join(r.run_id for r in runs))
        return views
    finally:
        if store is not store_or_dir:
            store.close()
