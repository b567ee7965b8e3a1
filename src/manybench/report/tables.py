"""The full table of a task (`report --all`, and every figure in the HTML page): every figure
the task has, each column in one unit (docs/definitions.md: lateness, skew, sync overhead,
phase cycle, aggregate bandwidth). The compact table is headline.py's; build.py assembles
the report from both.
"""
from __future__ import annotations

from typing import Callable

from ..status import Status
from ..analysis import PointSummary
from ..analysis.efficiency import WRONG_PEAK, PointEfficiency, unit
from ..kernels import figures as F
from ..kernels import kernel
from ..kernels.binding import parse_cpulist
from ..model import GROUP_KERNEL
from ..units import format_size
from .formats import DASH, count, ns, param_formatter, secs, swept
from .headline import Values, metric_names, figure_columns
from .view import GROUP_NOTE, Table, error_lines


def _ok_cell(s: PointSummary) -> str:
    cell = f"{s.ok}/{s.records}"
    bad = [f"{n} {name}" for name, n in ((Status.ERROR, s.error), (Status.TIMEOUT, s.timeout),
                                          (Status.LOST, s.lost)) if n]
    return cell + (f" ({', '.join(bad)})" if bad else "")


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
            return (f"{_pct(e.share.ratio)} of {e.share.nodes} x {count(e.share.single)} "
                    f"{unit(e.share.metric)}")
        cols.append(("share of\nN x single-node", share_cell))
        notes.append(f"share of N x single-node = {', '.join(shares)} at N nodes / (N x the "
                     "same point on one node with as many workers per node)")
    if any(e.nodes and e.nodes > 1 for e in pe) and (rules or shares):
        notes.append("peaks are each node's own (its inventory, collected on the node)")
    return cols, notes


def _flag_columns(points: list[PointSummary]) -> tuple[list[tuple[str, Callable]], list[str]]:
    """The kernel's flags (kernels/figures.py): what its figures mean, e.g. where reads came
    from as measured at T0 (kernels/pagecache.py)."""
    cols: list[tuple[str, Callable]] = []
    notes: list[str] = []
    for fig in kernel(points[0].kernel).figures:
        if fig.role != F.FLAG or fig.cell is None or not any(fig.name in s.metrics
                                                             for s in points):
            continue
        cols.append((fig.title, lambda s, fig=fig: DASH if s.metrics.get(fig.name) is None
                     else fig.cell(s.metrics[fig.name])))
        notes += [fig.note] if fig.note else []
    return cols, notes


STONEWALL_NOTE = ("stonewall (wear_out): the bytes every slot had written when the stonewall "
                  "was agreed / the stonewall time, measured as IOR does; blocks = the fewest "
                  "and most a slot had written by then (IO500's pairs accessed min / max); "
                  "each slot then wrote up to the most")


CPU_BOUND_NOTE = (F.CPU_UTIL.note + "; CPU-BOUND AT ITS PIN: it kept about all of them busy, "
                  "so its pin may be what limits it (a task with more threads than cpus runs "
                  "them in turn): try placement cpus = N or another bind; CPU-BOUND AT A "
                  "SHARED PIN: others took X of its cpus: they were about all busy, "
                  "X of them by other load (" + F.CPUS_BUSY.note + ")")


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
            if s.cpu_shared * 2 > s.ok:
                return text + (f" CPU-BOUND AT A SHARED PIN: others took "
                               f"{s.cpus_others or 0:.2f} of its cpus")
            return text + (" CPU-BOUND AT ITS PIN" if s.cpu_bound * 2 > s.ok else "")
        cols.append((F.CPU_UTIL.title, cell))
        notes.append(CPU_BOUND_NOTE)
    if any(s.wrap_startup_s is not None for s in points):
        cols.append((F.WRAP_STARTUP.title, lambda s: DASH if s.wrap_startup_s is None
                     else secs(s.wrap_startup_s)))
        notes.append(F.WRAP_STARTUP.note)
    return cols, notes


def _figures(points: list[PointSummary], values: Values, names: list[str]
             ) -> list[tuple[str, Callable, tuple[str, str] | None]]:
    """The columns of these figures (headline.py's, with ranges and p99s), each in one unit,
    with the (figure, scope) each shows."""
    cols: list[tuple[str, Callable, tuple[str, str] | None]] = []
    for name in names:
        got, _ = figure_columns(name, points, values, 0, every=True)
        cols += [(c.header, c.cell, c.figure) for c in got]
    return cols


def _texts(points: list[PointSummary]) -> list[tuple[str, Callable]]:
    """Facts the records carry as text (a tool's version: kernels/figures.py TEXT), as
    printed."""
    names = list(dict.fromkeys(n for s in points for n in s.texts))
    return [(kernel(points[0].kernel).metric_figure(n).title,
             lambda s, n=n: s.texts.get(n, DASH)) for n in names]


def _count_columns(points: list[PointSummary]) -> list[tuple[str, Callable]]:
    """Values a kernel counts over every record (a command's exit statuses): value x records."""
    return [(fig.title, lambda s, fig=fig: ", ".join(
        f"{code}x{n}" for code, n in sorted(s.counts.get(fig.name, {}).items())) or DASH)
        for fig in kernel(points[0].kernel).figures if fig.role == F.COUNT]


# the computed figures in the order a full table shows them; skew and lateness close it
_ORDER = [F.SYNC_OVERHEAD, F.CYCLE, F.BANDWIDTH, F.OPS_RATE, F.STONEWALL, F.ELAPSED,
          F.OWN_BANDWIDTH, F.OWN_OPS_RATE, F.LATENCY]
_LAST = [F.SKEW, F.LATENESS]


def task_table(task: str, points: list[PointSummary], values: Values,
               effs: dict[str, PointEfficiency] | None = None) -> Table:
    """One task's table of every figure it has (analysis/values.py), flags, counts, cpu use,
    efficiency and share (where a point has a peak or ran on several nodes)."""
    kernel_name = points[0].kernel
    varying = swept(points)
    fmts = {k: param_formatter(kernel_name, k) for k in varying}
    cols: list[tuple[str, Callable[[PointSummary], str]]] = []
    if any(s.variant for s in points):
        cols.append(("variant", lambda s: s.variant or DASH))
    cols.append(("workers", lambda s: str(s.workers)))
    for k in varying:
        cols.append((k, lambda s, k=k: fmts[k](s.params[k]) if k in s.params else DASH))
    keys = len(cols)
    cols += [("phases", lambda s: str(s.phases)), ("ok", _ok_cell)]
    if any(s.late.late_phases for s in points):
        cols.append(("late starts\n(phases)", lambda s: s.late.cell()))
    notes: list[str] = []
    if any(s.ops for s in points) and not kernel(kernel_name).sync_only:
        cols.append(("ops/phase", lambda s: count(s.ops)))
    if any(s.bytes for s in points):
        cols.append(("bytes/phase", lambda s: DASH if s.bytes is None else format_size(s.bytes)))
    figs: dict[int, tuple[str, str] | None] = {}

    def add(got: list[tuple[str, Callable, tuple[str, str] | None]]) -> None:
        for head, cell, fig in got:
            figs[len(cols)] = fig
            cols.append((head, cell))
    computed = [f.name for f in _ORDER]
    add(_figures(points, values, computed))
    if any(s.stonewall_bandwidth for s in points):
        cols.append(("stonewall\nhow measured", lambda s: DASH if not s.stonewall_bandwidth
                     else f"blocks {s.stonewall_blocks[0]}-{s.stonewall_blocks[1]}"
                     if s.stonewall_blocks else "measured" if s.stonewall_measured
                     else "estimated"))
        if any(s.stonewall_measured for s in points):
            notes.append(STONEWALL_NOTE)
    cols += _count_columns(points)
    flag_cols, flag_notes = _flag_columns(points)
    cols += flag_cols + _texts(points)
    notes += flag_notes
    last = [f.name for f in _LAST]
    # a metric named as a computed figure (a command's `latency`) is that figure's column
    add(_figures(points, values, [n for n in metric_names(points)
                                  if n not in computed + last]))
    cpu_cols, cpu_notes = _cpu_columns(points)
    cols += cpu_cols
    notes += cpu_notes
    eff_cols, eff_notes = _efficiency_columns(points, effs or {})
    cols += eff_cols
    notes += eff_notes
    add(_figures(points, values, last))
    if kernel_name == GROUP_KERNEL:
        notes.append(GROUP_NOTE)
    clock = [s.clock_error_ns for s in points if s.clock_error_ns is not None]
    if clock and max(clock) > 0:   # 0: every slot read the coordinator's own clock
        notes.append(f"clock offset error bound: up to {ns(max(clock))}")
    if any(s.latency_source == "metrics" for s in points):
        notes.append("latency: median over slots of each slot's percentile (no histograms stored)")
    return Table(title=f"{task} ({kernel_name})", columns=[c for c, _ in cols],
                 rows=[[f(s) for _, f in cols] for s in points], keys=keys, notes=notes,
                 errors=error_lines(points), task=task, points=[s.point for s in points],
                 figures=[figs.get(j) for j in range(len(cols))])
