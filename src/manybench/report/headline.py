"""The compact table of a task: workers, the swept axes, its headline figures, skew.

Each kernel names its headline figures (the `headline` trait, kernels/base.py); a command
task's are the metrics its output gave. A throughput figure gets two columns, the aggregate
and per slot (aggregate / workers) beside it. Every figure is the median over the point's
phases (or slots, for a kernel's own metrics) with its range: "1.23 (1.10-1.30)". Byte rates
take one unit per column, named in the header; times are written in human units.

Columns carry a priority: a terminal too narrow for them all drops the least important first
and says which (report/terminal.py); `--metrics` picks the figures, `--all` shows every one.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable

from ..analysis import PointSummary
from ..analysis.efficiency import PointEfficiency, unit
from ..analysis.stats import Spread
from ..kernels import kernel
from ..record import Record
from ..results.contract import StoredPhase
from .colunits import (count_spread, human_time, median_only, metric_unit, num, rate_unit,
                       time_spread, value_spread)
from .formats import DASH, count, param_formatter, swept

# figures every kernel may name besides its metrics (and what `--metrics` accepts)
BUILTIN = ("bandwidth", "ops_rate", "sync_overhead", "skew", "lateness", "latency", "elapsed",
           "stonewall")
# metrics that are not figures of their own (shown elsewhere or bookkeeping)
HIDDEN = {"cached_fraction", "cache_dropped", "stonewall_s", "stonewall_bytes",
          "stonewall_blocks", "wear_out_blocks", "reorder_shift", "role", "endpoint_bytes"}
NOTE = ("figures: median (min-max) over phases, or over slots for a kernel's own metrics; per "
        "slot = aggregate / workers")

Cell = Callable[[PointSummary], str]


@dataclass
class Column:
    name: str          # the figure's name (what --metrics takes)
    header: str        # "\n" where a terminal header breaks
    cell: Cell
    priority: int      # lower: kept longer when the terminal is narrow
    spread: bool = False   # cells are "median (min-max)": a narrow terminal keeps the median


@dataclass
class Headline:
    """A compact table: columns in display order; `drop` = indices to drop first when narrow."""
    columns: list[Column]
    keys: int
    notes: list[str]
    missing: list[str]        # figures asked for by --metrics this task does not have


def metric_spreads(records: Iterable[Record], phases: Iterable[StoredPhase]
                   ) -> dict[str, dict[str, Spread]]:
    """Per point key, each metric's min / median / max over the point's ok records."""
    point_of = {p.index: p.point for p in phases}
    values: dict[str, dict[str, list[float]]] = {}
    for r in records:
        if r.status != "ok" or r.phase not in point_of:
            continue
        per = values.setdefault(point_of[r.phase], {})
        for name, v in r.metrics.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                per.setdefault(name, []).append(v)
    return {p: {n: s for n, vs in m.items() if (s := Spread.of(vs)) is not None}
            for p, m in values.items()}


def _split_name(name: str, width: int = 12) -> str:
    """A long metric name broken at underscores into header lines of about `width`."""
    lines: list[str] = []
    for part in name.split("_"):
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += "_" + part
        else:
            lines.append(part if not lines else "_" + part)
    return "\n".join(lines)


def _rate_columns(name: str, label: str, points: list[PointSummary],
                  get: Callable[[PointSummary], Spread | None], prio: int) -> list[Column]:
    """A byte rate: the aggregate with its range, and per slot, in one unit per column."""
    unit_name, div = rate_unit(s.median for p in points if (s := get(p)))

    def agg(p: PointSummary) -> str:
        s = get(p)
        return DASH if s is None else value_spread(s.median, s.min, s.max, div)

    per_unit, per_div = rate_unit(s.median / max(p.workers, 1) for p in points if (s := get(p)))

    def per(p: PointSummary) -> str:
        s = get(p)
        return DASH if s is None else num(s.median / max(p.workers, 1) / per_div)
    return [Column(name, f"{label}\n{unit_name}", agg, prio, True),
            Column(name, f"per slot\n{per_unit}", per, prio + 1)]


def _ops_columns(points: list[PointSummary], prio: int) -> list[Column]:
    def agg(p: PointSummary) -> str:
        s = p.ops_rate
        return DASH if s is None else count_spread(s.median, s.min, s.max)

    def per(p: PointSummary) -> str:
        x = None if p.ops_rate is None else p.ops_rate.median / max(p.workers, 1)
        return DASH if x is None else count_spread(x, x, x)
    return [Column("ops_rate", "ops/s", agg, prio, True),
            Column("ops_rate", "per slot\nops/s", per, prio + 1)]


def _dist_cell(get: Callable[[PointSummary], object], p99: bool) -> Cell:
    def cell(p: PointSummary) -> str:
        d = get(p)
        if d is None:
            return DASH
        parts = [d.median, d.p99, d.max] if p99 else [d.median, d.max]   # type: ignore[attr-defined]
        return " / ".join(human_time(x / 1e9) for x in parts)
    return cell


def _metric_columns(name: str, points: list[PointSummary],
                    spreads: dict[str, dict[str, Spread]], prio: int) -> list[Column]:
    kind, factor, base = metric_unit(name)

    def get(p: PointSummary) -> Spread | None:
        s = spreads.get(p.point, {}).get(name)
        if s is None and name in p.metrics:
            v = p.metrics[name]
            s = Spread(v, v, v, 1)
        return s if s is None else Spread(s.min * factor, s.median * factor, s.max * factor, s.n)
    if kind == "rate":
        unit_name, div = rate_unit(s.median for p in points if (s := get(p)))
        return [Column(name, f"{_split_name(base)}\n{unit_name}",
                       lambda p: DASH if (s := get(p)) is None
                       else value_spread(s.median, s.min, s.max, div), prio, True)]
    if kind == "time":
        return [Column(name, _split_name(base), lambda p: DASH if (s := get(p)) is None
                       else time_spread(s.median, s.min, s.max), prio, True)]
    return [Column(name, _split_name(name), lambda p: DASH if (s := get(p)) is None
                   else count_spread(s.median, s.min, s.max), prio, True)]


def figure_columns(name: str, points: list[PointSummary],
                   spreads: dict[str, dict[str, Spread]], prio: int) -> list[Column]:
    """The columns of one named figure; none when no point of the task has it."""
    if name == "bandwidth" and any(p.bandwidth for p in points):
        return _rate_columns(name, "bandwidth", points, lambda p: p.bandwidth, prio)
    if name == "stonewall" and any(p.stonewall_bandwidth for p in points):
        return _rate_columns(name, "stonewall", points, lambda p: p.stonewall_bandwidth, prio)
    if name == "ops_rate" and any(p.ops_rate for p in points):
        return _ops_columns(points, prio)
    if name == "sync_overhead" and any(p.sync_overhead for p in points):
        return [Column(name, "sync overhead\nmed / p99 / max",
                       _dist_cell(lambda p: p.sync_overhead, True), prio)]
    if name == "skew" and any(p.skew for p in points):
        return [Column(name, "skew\nmed / max", _dist_cell(lambda p: p.skew, False), prio)]
    if name == "lateness" and any(p.lateness for p in points):
        return [Column(name, "lateness\nmed / max", _dist_cell(lambda p: p.lateness, False),
                       prio)]
    if name == "latency" and any(p.latency_us for p in points):
        return [Column(name, "latency\np50 / p99", lambda p: " / ".join(
            DASH if p.latency_us.get(q) is None else human_time(p.latency_us[q] / 1e6)
            for q in ("p50", "p99")), prio)]
    if name == "elapsed" and any(p.slot_elapsed for p in points):
        return [Column(name, "per-slot\ntime", lambda p: DASH
                       if p.slot_elapsed is None else time_spread(
                           p.slot_elapsed.median, p.slot_elapsed.min, p.slot_elapsed.max),
                       prio, True)]
    if name not in BUILTIN and any(name in p.metrics for p in points):
        return _metric_columns(name, points, spreads, prio)
    return []


def default_figures(points: list[PointSummary]) -> list[str]:
    """A task's headline: its kernel's, else a command's metrics, else throughput or time."""
    traits = kernel(points[0].kernel)
    if traits.headline:
        return list(traits.headline)
    names: list[str] = []
    for p in points:
        names += [n for n in p.metrics if n not in names and n not in HIDDEN]
    if traits.runs_child:
        return names + ["elapsed"]
    return ["bandwidth", "ops_rate"] + names if any(p.ops_rate for p in points) else \
        names + ["elapsed"]




def _ok(p: PointSummary) -> str:
    return f"{p.ok}/{p.records}"


def headline(points: list[PointSummary], spreads: dict[str, dict[str, Spread]],
             effs: dict[str, PointEfficiency] | None = None,
             figures: list[str] | None = None) -> Headline:
    """The compact table's columns for one task (`figures`: --metrics, else the headline)."""
    kernel_name = points[0].kernel
    cols: list[Column] = []
    if any(p.variant for p in points):
        cols.append(Column("variant", "variant", lambda p: p.variant or DASH, 0))
    cols.append(Column("workers", "workers", lambda p: str(p.workers), 0))
    for k in swept(points):
        fmt = param_formatter(kernel_name, k)
        cols.append(Column(k, k, lambda p, k=k, fmt=fmt: fmt(p.params[k]) if k in p.params
                           else DASH, 0))
    keys = len(cols)
    notes: list[str] = []
    reps = Counter(p.phases for p in points)
    if len(reps) > 1:
        cols.append(Column("phases", "phases", lambda p: str(p.phases), 30))
    if any(p.ok < p.records for p in points):
        cols.append(Column("ok", "ok", _ok, 1))
    asked = figures is not None
    names = list(figures) if asked else default_figures(points)
    if not asked and "skew" not in names:
        names.append("skew")
    missing = []
    declared = bool(kernel(kernel_name).headline)
    for i, name in enumerate(names):
        # skew belongs with a kernel's first figure; a command's own metrics come before it
        prio = 15 if name == "skew" and declared and not asked else 10 + 10 * i
        got = figure_columns(name, points, spreads, prio)
        if not got:
            missing.append(name)
        cols += got
    if not asked:
        cols += _flag_columns(points, effs or {})
    return Headline(cols, keys, notes, missing if asked else [])


def _flag_columns(points: list[PointSummary], effs: dict[str, PointEfficiency]) -> list[Column]:
    """Columns that say what a figure means: reads from memory, share of a peak."""
    out: list[Column] = []
    if any("cached_fraction" in p.metrics for p in points):
        def cached(p: PointSummary) -> str:
            f = p.metrics.get("cached_fraction")
            if f is None:
                return DASH
            return f"{'memory' if f >= 0.5 else 'device'} ({f * 100:.0f}% cached)"
        out.append(Column("cached_fraction", "reads from\n(page cache)", cached, 2))
    if any(p.late.late_phases for p in points):     # late starts, with their causes
        out.append(Column("late", "late starts\n(phases)", lambda p: p.late.cell(), 14))
    if any(e.efficiency for e in effs.values()):
        def eff(p: PointSummary) -> str:
            e = effs.get(p.point)
            if e is None or e.efficiency is None:
                return DASH
            x = e.efficiency
            if x.above_peak:     # not a result: the peak is wrong
                return f"wrong peak (> {count(x.peak)} {unit(x.metric)})"
            return f"{x.ratio * 100:.0f}% of {count(x.peak)} {unit(x.metric)}"
        out.append(Column("efficiency", "efficiency\nof peak", eff, 15))
    if any(e.share for e in effs.values()):
        def share(p: PointSummary) -> str:
            e = effs.get(p.point)
            if e is None or e.share is None:
                return DASH
            return f"{e.share.ratio * 100:.0f}% of {e.share.nodes} x {count(e.share.single)}"
        # scaling over nodes is what a multi-node point is about: kept before efficiency
        out.append(Column("share", "share of\nN x single-node", share, 3))
    return out


def known_figures(points: list[PointSummary]) -> list[str]:
    """Every figure name --metrics may ask of this task."""
    names = [n for n in BUILTIN if figure_columns(n, points, {}, 0)]
    for p in points:
        names += [n for n in p.metrics if n not in names and n not in HIDDEN]
    return names


def headline_table(task: str, points: list[PointSummary], spreads: dict[str, dict[str, Spread]],
                   effs: dict[str, PointEfficiency] | None = None,
                   figures: list[str] | None = None):   # -> tables.Table
    """The compact Table of one task; `drop` lists columns least important first."""
    from .tables import Table, _errors      # tables imports this module
    from .tables import GROUP_NOTE
    from ..model import GROUP_KERNEL
    h = headline(points, spreads, effs, figures)
    notes = list(h.notes) + ([GROUP_NOTE] if points[0].kernel == GROUP_KERNEL else [])
    if h.missing:
        notes.append(f"not measured by this task: {', '.join(h.missing)}")
    order = sorted(range(h.keys, len(h.columns)), key=lambda j: -h.columns[j].priority)
    rows = [[c.cell(p) for c in h.columns] for p in points]
    reps = {p.phases for p in points}
    n = next(iter(reps))
    each = (f", {n} phase{'s' if n != 1 else ''} a row") if len(reps) == 1 else ""
    return Table(title=f"{task} ({points[0].kernel}){each}", columns=[c.header for c in h.columns],
                 rows=rows, short_rows=[[median_only(x) if c.spread else x
                                         for x, c in zip(row, h.columns)] for row in rows],
                 keys=h.keys,
                 notes=notes, errors=_errors(points), drop=order,
                 names=[c.name for c in h.columns])
