"""The comparison and reference tables (analysis/compare.py, analysis/reference.py) as Tables
that terminal.py and html.py lay out like the others."""
from __future__ import annotations

import math

from ..analysis.compare import (ELAPSED, SYNC, Comparison, Figure, RunData, TaskComparison,
                                task_verdict, times_text, unmatched, within_run)
from ..analysis.efficiency import unit
from ..analysis.points import PointSummary
from ..analysis.reference import FAIL, RefCheck, evaluate
from ..record import Record
from ..results.contract import RunInfo, StoredPhase
from ..units import format_rate
from ..analysis.values import metric_unit
from .colunits import column_unit, num
from .formats import DASH, count, ns, param_formatter, secs, swept
from .view import RunView, Table

DEFINITIONS = ("geo mean = the geometric mean of a figure over repetitions (`report` shows "
               "medians); faster or slower = how many "
               "times faster or slower the compared side is in the figure's direction (a time "
               "larger, a rate smaller: slower) [its 95% confidence interval]; not significant "
               "= the interval holds 1 (no difference); n too small = fewer than 3 repetitions "
               "on a side, too few for an interval; elapsed = the phase's last end - first "
               "start (docs/comparisons.md)")
VARIANTS_TEST = ("test: paired t on the log ratios when every repetition has both sides (the "
                 "variants of a repetition ran back to back), else Welch's t on the log values")
RUNS_TEST = ("runs compared point by point (the same task, parameters, workers, placement and "
             "variant); repetitions of different runs did not run together: Welch's t on the "
             "log values")
NOT_INTERLEAVED = ("{} ran one after the other, not interleaved (a variant with setup or "
                   "teardown): drift over the run is not cancelled and may show as a difference")


def value_text(fig: Figure, v: float | None) -> str:
    """A figure in its unit: durations for times, B/s for bandwidth, counts for the rest."""
    if v is None:
        return DASH
    if fig is SYNC:
        return ns(v)
    if fig is ELAPSED:
        return secs(v)
    if fig.source == "bandwidth":
        return format_rate(v)
    if fig.source == "ops":
        return f"{count(v)} ops/s"
    u = unit(fig.metric)
    return count(v) + (f" {u}" if u != fig.metric else "")


def _unit_of(fig: Figure, kernel_name: str) -> tuple[str, float]:
    """The unit a figure's values are written in (analysis/values.py) and the factor to it."""
    if fig is SYNC:
        return "s", 1e-9
    if fig is ELAPSED:
        return "s", 1.0
    if fig.source == "bandwidth":
        return "B/s", 1.0
    if fig.source == "ops":
        return "ops/s", 1.0
    return metric_unit(kernel_name, fig.metric)


def overhead_text(c: Comparison) -> str:
    """"1.10 times slower [1.08, 1.12]" (hyperfine's wording), "-" without values."""
    return c.times() or DASH


def _n_text(c: Comparison) -> str:
    e = c.estimate
    if e is None:
        return f"{len(c.base.values)}+{len(c.other.values)}"
    return f"{e.n_base}+{e.n_other}" + (f" {e.method}" if e.method else "")


def _label(c: Comparison, base_params: dict) -> str:
    """The compared side: its variant or run, with the params it changed (a variant's `set`)."""
    o = c.other.point
    changed = [f"{k}={param_formatter(o.kernel, k)(v)}" for k, v in o.params.items()
               if k != "dir" and base_params.get(k) != v]
    return c.other.label + (f" ({' '.join(changed)})" if changed else "")


def comparison_table(tc: TaskComparison, runs: bool = False) -> Table:
    """One task's comparisons: a row per point and compared variant (or run), and a row with
    the whole task's verdict per variant (or run) when the task has several points."""
    bases = list({id(c.base.point): c.base.point for c in tc.rows}.values())
    varying = swept(bases, skip=("dir",))
    fmts = {k: param_formatter(bases[0].kernel, k) for k in varying}
    figs = list(dict.fromkeys(c.figure for c in tc.rows))
    labels = list(dict.fromkeys(c.other.label for c in tc.rows))
    # across runs the variant is part of the point; the run column only when several are
    with_variant = runs and any(p.variant for p in bases)
    keys = ["workers"] + varying + (["variant"] if with_variant else [])
    side = ["variant"] if not runs else ["run"] if len(labels) > 1 else []
    # one figure: its values in one unit, named in the header; several: each cell its own
    value = value_text
    unit_text = ""
    if len(figs) == 1:
        base_unit, factor = _unit_of(figs[0], bases[0].kernel)
        means = [x * factor for c in tc.rows for x in (c.base.geomean(), c.other.geomean())
                 if x is not None]
        unit, div = column_unit(base_unit, means)
        unit_text = f", {unit}" if unit else ""
        value = lambda f, v: DASH if v is None else num(v * factor / div)   # noqa: E731
    cols = keys + side + (["figure"] if len(figs) > 1 else []) + [
        f"baseline\ngeo mean{unit_text}", f"compared\ngeo mean{unit_text}",
        "faster or\nslower\n[95% CI]", "verdict", "n (test)"]
    rows = []
    for c in tc.rows:
        b = c.base.point
        row = [str(b.workers)] + [fmts[k](b.params[k]) if k in b.params else DASH
                                  for k in varying]
        row += [b.variant or DASH] if with_variant else []
        row += [_label(c, b.params)] if side else []
        row += [c.figure.name] if len(figs) > 1 else []
        row += [value(c.figure, c.base.geomean()), value(c.figure, c.other.geomean()),
                overhead_text(c), c.verdict, _n_text(c)]
        rows.append(row)
    rows += _task_rows(tc, len(keys), len(side), len(figs) > 1)
    what = f"{', '.join(labels)} against {tc.baseline}"
    fig_text = f"{figs[0].name}, {figs[0].direction}" if len(figs) == 1 else "figure per row"
    notes = [RUNS_TEST if runs else VARIANTS_TEST]
    late = [c.other.label for c in tc.rows if not c.interleaved]
    if late:
        notes.append(NOT_INTERLEAVED.format(f"{tc.baseline} and {', '.join(dict.fromkeys(late))}"))
    return Table(title=f"{tc.task}: {what} ({fig_text})", columns=cols, rows=rows,
                 keys=len(keys) + len(side), notes=notes, wrap=True)


def _task_rows(tc: TaskComparison, nkeys: int, nside: int, with_fig: bool) -> list[list[str]]:
    """Per compared label with several points: the geometric mean of its points' overheads
    and the task's verdict over them."""
    out = []
    for label in dict.fromkeys(c.other.label for c in tc.rows):
        mine = [c for c in tc.rows if c.other.label == label]
        if len(mine) < 2:
            continue
        costs = [c.cost(c.estimate.ratio) for c in mine if c.estimate is not None]
        over = (times_text(math.exp(sum(map(math.log, costs)) / len(costs)), None, bare=True)
                + " (geo mean)" if costs else DASH)
        row = [f"all {len(mine)} points"] + [""] * (nkeys - 1) + [label] * nside
        row += [""] if with_fig else []
        row += ["", "", over, task_verdict([c.verdict for c in mine]), ""]
        out.append(row)
    return out


def reference_table(checks: list[RefCheck]) -> Table:
    """Each reference at each point it applies to, with pass or FAIL."""
    rows = [[c.key, c.where(), c.expected(),
             DASH if c.measured is None else f"{c.measured:.4g}",
             c.status + (f": {c.why}" if c.why else "")] for c in checks]
    failed = sum(c.status == FAIL for c in checks)
    return Table(title=f"references ({failed} failed)" if failed else "references (all pass)",
                 columns=["reference", "point", "expected\nvalue [low, high]",
                          "measured\n(median)", "result"], rows=rows, keys=2, wrap=True,
                 notes=["expected: the plan's [reference] value with ReFrame's relative bounds "
                        "(value x (1 + lower) .. value x (1 + upper)); measured: the median "
                        "over the point's phases (docs/comparisons.md)"])


def run_tables(info: RunInfo, summaries: list[PointSummary], records: list[Record],
               phases: list[StoredPhase]) -> list[Table]:
    """The comparison tables of a run's variants, then its references, if it has any."""
    run = RunData(info.run_id, info, summaries, records, phases)
    tables = [comparison_table(tc) for tc in within_run(run)]
    if tables:       # the definitions once, below the first
        tables[0].notes.append(DEFINITIONS)
    checks = evaluate(run)
    if checks:
        tables.append(reference_table(checks))
    return tables


def compare_view(runs: list[RunData], tcs: list[TaskComparison], checks: list[RefCheck]
                 ) -> RunView:
    """What `manybench compare` prints: the runs, a table per task, the newest run's
    references."""
    header = [(f"{r.label}" + (" (baseline)" if i == 0 else ""),
               f"{r.source or r.info.run_id}: run {r.info.run_id} ({r.info.name}, "
               f"{r.info.status}, {r.info.phases} phases)")
              for i, r in enumerate(runs)]
    tables = [comparison_table(tc, runs=True) for tc in tcs]
    if checks:
        newest = max(runs, key=lambda r: r.info.started_ns)
        t = reference_table(checks)
        t.title += f" of the newest run, {newest.label}"
        tables.append(t)
    names = ", ".join(r.label for r in runs[1:])
    a = runs[0].label
    notes = []
    for label, (lack, extra) in unmatched(runs).items():
        parts = ([f"{lack} points of {a} that {label} does not have"] if lack else []) + \
            ([f"{extra} points of {label} that {a} does not have"] if extra else [])
        if parts:
            notes.append("not compared: " + "; ".join(parts))
    return RunView(title=f"compare {names} against {a}", header=header, notes=notes,
                   tables=tables, legend=DEFINITIONS)
