"""The compact table of a task: workers, the swept axes, its headline figures, skew.

Each kernel names its headline figures (kernels/figures.py, `headline`); a command task's are
the metrics its output gave. The numbers come from analysis/values.py, the same `report
--json` gives. A figure summed over the slots (bandwidth, ops/s, a declared rate) gets two
columns, the aggregate and per slot (aggregate / workers) beside it, in the same unit; a
slot's own figure is labelled per slot. Every column states one unit in its header; cells
are the median with its range over phases (or slots): "1.23 (1.10-1.30)".

Columns carry a priority: a terminal too narrow for them all drops the least important first
and says which (report/terminal.py); `--metrics` picks the figures, `--all` shows every one.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

from ..analysis import PointSummary
from ..analysis.headfigure import headline_names as default_figures
from ..analysis.headfigure import metric_names
from ..analysis.efficiency import PointEfficiency
from ..analysis.efficiency import unit as own_unit
from ..analysis.stats import Spread
from ..analysis.metric_units import metric_unit
from ..analysis.values import AGGREGATE, Value, point_values
from ..kernels import figures as F
from ..kernels import kernel
from ..model import GROUP_KERNEL
from .colunits import figure_units, median_only, num, value_spread
from .formats import DASH, param_formatter, swept
from .view import GROUP_NOTE, Table, error_lines

# figures every kernel may name besides its metrics (and what `--metrics` accepts)
BUILTIN = tuple(f.name for f in F.COMPUTED)
NOTE = ("figures: median (min-max) over phases, or over slots for a slot's own metric (the "
        "shares per slot and per job: above)")
# a distribution's cells (its Value's shape: median / p99 / max, not median (min-max)): the
# parts a compact table shows of each
_DIST = {F.SYNC_OVERHEAD.name: ("median", "p99", "max"), F.CYCLE.name: ("median", "max"),
         F.SKEW.name: ("median", "max"), F.LATENESS.name: ("median", "max"),
         F.LATENCY.name: ("median", "p99")}
_EVERY = ("median", "p99", "max")
_PART = {"median": "med", "p99": "p99", "max": "max"}

Cell = Callable[[PointSummary], str]


@dataclass
class Column:
    name: str          # the figure's name (what --metrics takes)
    header: str        # "\n" where a terminal header breaks
    cell: Cell
    priority: int      # lower: kept longer when the terminal is narrow
    spread: bool = False   # cells are "median (min-max)": a narrow terminal keeps the median
    figure: tuple[str, str] | None = None   # (figure, scope) its cells show the median of


@dataclass
class Headline:
    """A compact table: columns in display order; `drop` = indices to drop first when narrow."""
    columns: list[Column]
    keys: int
    notes: list[str]
    missing: list[str]        # figures asked for by --metrics this task does not have


Values = dict[str, dict[str, list[Value]]]     # point key -> figure -> its values


def task_values(points: list[PointSummary], spreads: dict[str, dict[str, Spread]]) -> Values:
    return {p.point: point_values(p, spreads.get(p.point)) for p in points}


def _pick(values: Values, p: PointSummary, name: str, scope: str) -> Value | None:
    return next((v for v in values.get(p.point, {}).get(name, []) if v.scope == scope), None)


def scope_values(points: list[PointSummary], values: Values, name: str
                 ) -> dict[str, list[Value]]:
    """One figure's Values over a task's points, by scope (in the order they come)."""
    out: dict[str, list[Value]] = {}
    for p in points:
        for v in values.get(p.point, {}).get(name, []):
            out.setdefault(v.scope, []).append(v)
    return out


def _header(v: Value, unit: str, scoped: bool) -> str:
    """Label, then scope and unit: "bandwidth\naggregate, GiB/s"; `scoped` False for a
    figure that is neither a sum nor a slot's own metric (skew, lateness: the label says)."""
    title = v.label.replace("\n", " ")
    label = title if len(title) <= 16 else _split_name(title)
    second = ", ".join(x for x in ((v.scope if scoped else ""), unit) if x)
    return f"{label}\n{second}" if second else label


def _split_name(name: str, width: int = 12) -> str:
    """A long name broken at underscores or spaces into header lines of about `width`."""
    lines: list[str] = []
    sep = "_" if "_" in name else " "
    for part in name.split(sep):
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += sep + part
        else:
            lines.append(part if not lines else (sep + part).strip())
    return "\n".join(lines)


def figure_columns(name: str, points: list[PointSummary], values: Values, prio: int,
                   every: bool = False) -> tuple[list[Column], dict[str, tuple[str, float]]]:
    """The columns of one named figure (none when no point of the task has it), and the
    unit each of its scopes is written in: scope -> (unit, divisor). `every`: a
    distribution with its p99 too (the full table)."""
    cols: list[Column] = []
    by_scope = scope_values(points, values, name)
    scopes = list(by_scope)
    units = figure_units(by_scope)
    for i, scope in enumerate(scopes):
        vs = by_scope[scope]
        # a figure's header says its scope, but where its label does (per-slot time), for
        # a distribution (skew, lateness: per phase, per slot by definition) and for the
        # phase's own figure (a skew across jobs: one per phase, over records)
        scoped = len(scopes) > 1 or not ("slot" in vs[0].label or vs[0].shape == F.DIST
                                         or scope == AGGREGATE and vs[0].over == "records")
        # the per-slot column of a sum is the first a narrow terminal drops
        rank = prio + i * 50
        unit, div = units[scope]
        if vs[0].shape == F.DIST:
            parts = _EVERY if every and name != F.LATENCY.name else _DIST.get(name, _EVERY)
            what = " / ".join("p50" if name == F.LATENCY.name and x == "median" else _PART[x]
                              for x in parts)
            cols.append(Column(name, f"{_header(vs[0], unit, scoped)}\n{what}",
                               _dist_cell(values, name, scope, div, parts), rank,
                               figure=(name, scope)))
        else:
            # a dropped per-slot column is named so: its aggregate may still be shown
            cols.append(Column(name if i == 0 else f"{name} {scope}",
                               _header(vs[0], unit, scoped),
                               _spread_cell(values, name, scope, div, i == 0), rank,
                               spread=i == 0, figure=(name, scope)))
    return cols, units


def _spread_cell(values: Values, name: str, scope: str, div: float, ranged: bool) -> Cell:
    def cell(p: PointSummary) -> str:
        v = _pick(values, p, name, scope)
        if v is None:
            return DASH
        return value_spread(v.median, v.min, v.max, div) if ranged else num(v.median / div)
    return cell


def _dist_cell(values: Values, name: str, scope: str, div: float,
               parts: tuple[str, ...]) -> Cell:
    def cell(p: PointSummary) -> str:
        v = _pick(values, p, name, scope)
        if v is None:
            return DASH
        xs = [getattr(v, part) for part in parts]
        return " / ".join(num(x / div) if x is not None else DASH for x in xs)
    return cell


def _ok(p: PointSummary) -> str:
    return f"{p.ok}/{p.records}"


def headline(points: list[PointSummary], values: Values,
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
    units: dict[str, dict[str, tuple[str, float]]] = {}
    per_name: dict[str, list[Column]] = {}
    for i, name in enumerate(names):
        # skew belongs with a kernel's first figure; a command's own metrics come before it
        prio = 15 if name == "skew" and declared and not asked else 10 + 10 * i
        per_name[name], units[name] = figure_columns(name, points, values, prio)
    flag_cols, flag_notes = _flag_columns(points, effs or {}, units)
    if asked:    # a flag (efficiency, share, late, a kernel's) named by --metrics: its column
        flags = {c.name: c for c in flag_cols}
        for i, name in enumerate(names):
            if not per_name[name] and name in flags:
                flags[name].priority = 10 + 10 * i
                per_name[name] = [flags[name]]
                notes += [flag_notes[name]] if name in flag_notes else []
    for name in names:
        if not per_name[name]:
            missing.append(name)
        cols += per_name[name]
    if not asked:
        if F.CYCLE.name in names:
            # the null table sets lateness and phase cycle beside SMTEF's figure: a narrow
            # terminal drops the late starts' causes (the run's notes count them) first
            last = max((c.priority for c in cols), default=0)
            for c in flag_cols:
                if c.name == "late":
                    c.priority = last + 1
        cols += flag_cols
        notes += list(flag_notes.values())
    return Headline(cols, keys, notes, missing if asked else [])


def _flag_columns(points: list[PointSummary], effs: dict[str, PointEfficiency],
                  units: dict[str, dict[str, tuple[str, float]]]
                  ) -> tuple[list[Column], dict[str, str]]:
    """Columns that say what a figure means: a kernel's flags (reads from memory), the
    share of a peak and of N x one node, in the unit of the figure's own column; and the
    notes that explain them, by column name."""
    out: list[Column] = []
    notes: dict[str, str] = {}
    for fig in kernel(points[0].kernel).figures:
        if fig.role != F.FLAG or fig.cell is None or not any(fig.name in p.metrics
                                                             for p in points):
            continue
        out.append(Column(fig.name, fig.title, lambda p, fig=fig: DASH
                          if p.metrics.get(fig.name) is None else fig.cell(p.metrics[fig.name]),
                          2))
        if fig.note:
            notes[fig.name] = fig.note
    if any(p.late.late_phases for p in points):     # late starts, with their causes
        out.append(Column("late", "late starts\n(phases)", lambda p: p.late.cell(), 14))
    # this task's points only: effs holds the whole run's
    mine = [e for e in (effs.get(p.point) for p in points) if e is not None]
    if any(e.efficiency for e in mine):
        def eff(p: PointSummary) -> str:
            e = effs.get(p.point)
            if e is None or e.efficiency is None:
                return DASH
            x = e.efficiency
            unit, div = figure_unit(x.metric, units, p)
            if x.above_peak:     # not a result: the peak is wrong
                return f"wrong peak (> {num(x.peak * div)}" + (f" {unit})" if unit else ")")
            return f"{x.ratio * 100:.0f}% of {num(x.peak * div)}" + (f" {unit}" if unit else "")
        out.append(Column("efficiency", "efficiency\nof peak", eff, 15))
        # which peak and why (cores x clock x flops per cycle, precision, the clock's source)
        notes["efficiency"] = "; ".join(f"efficiency = {r}" for r in dict.fromkeys(
            e.efficiency.rule for e in mine if e.efficiency))
    if any(e.share for e in mine):
        def share(p: PointSummary) -> str:
            e = effs.get(p.point)
            if e is None or e.share is None:
                return DASH
            unit, div = figure_unit(e.share.metric, units, p)
            return (f"{e.share.ratio * 100:.0f}% of {e.share.nodes} x "
                    f"{num(e.share.single * div)}" + (f" {unit}" if unit else ""))
        # scaling over nodes is what a multi-node point is about: kept before efficiency
        out.append(Column("share", "share of\nN x single-node", share, 3))
    return out, notes


# how efficiency.py names the aggregate figures: the table's figure, and its unit in B/s
_AGGREGATE_OF = {"bandwidth_mb_s": ("bandwidth", 1e6), "ops_per_s": ("ops_rate", 1.0)}


def figure_unit(metric: str, units: dict[str, dict[str, tuple[str, float]]],
                p: PointSummary) -> tuple[str, float]:
    """(unit, factor) to write a value of efficiency.py's `metric` in the unit of that
    figure's aggregate column; its own unit when the table has no such column."""
    name, to_base = _AGGREGATE_OF.get(metric, (metric, 0.0))
    if not to_base:
        _, to_base = metric_unit(p.kernel, metric)
    col = units.get(name, {}).get(AGGREGATE)
    if col is None:
        return own_unit(metric), 1.0
    unit, div = col
    return unit, to_base / div


def known_figures(points: list[PointSummary],
                  effs: dict[str, PointEfficiency] | None = None) -> list[str]:
    """Every figure name --metrics may ask of this task: its figures, then the columns that
    say what they mean where the task has them (the names a narrow terminal says it left
    out)."""
    values = task_values(points, {})
    names = [n for n in BUILTIN if any(n in values[p.point] for p in points)]
    names += [n for n in metric_names(points) if n not in names]
    flags, _ = _flag_columns(points, effs or {}, {})
    return names + [c.name for c in flags if c.name not in names]


def headline_table(task: str, points: list[PointSummary], values: Values,
                   effs: dict[str, PointEfficiency] | None = None,
                   figures: list[str] | None = None) -> Table:
    """The compact Table of one task; `drop` lists columns least important first."""
    h = headline(points, values, effs, figures)
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
                 keys=h.keys, notes=notes, errors=error_lines(points), drop=order,
                 names=[c.name for c in h.columns], task=task, points=[p.point for p in points],
                 figures=[c.figure for c in h.columns])
