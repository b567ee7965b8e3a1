"""The comparison and reference tables (analysis/compare.py, analysis/reference.py) as Tables
that terminal.py and html.py lay out like the others."""
from __future__ import annotations

import math

from typing import Any

from ..analysis.compare import (Comparison, RunData, Side, TaskComparison, task_verdict,
                                times_text, unmatched, within_run)
from ..analysis.joins import Unpaired
from ..analysis.points import point_of
from ..analysis.reference import FAIL, RefCheck, evaluate
from ..analysis.values import Value
from ..analysis.run_read import RunRead
from ..results.contract import RunInfo
from .colunits import column_unit, num
from .formats import DASH, param_formatter, plural, swept
from .unpaired import PointWords
from .view import RunView, Table

DEFINITIONS = ("median = the figure as `report` shows it (over phases, or over slots for a "
               "slot's own metric); faster or slower = how many "
               "times faster or slower the compared side is in the figure's direction (a time "
               "larger, a rate smaller: slower), from the geometric means of the figure over "
               "repetitions, [its 95% confidence interval]; not significant "
               "= the interval holds 1 (no difference); n too small = fewer than 3 repetitions "
               "on a side, too few for an interval (docs/comparisons.md)")
DISAGREE = ("{}: the medians and the factor (from geometric means) point different ways: "
            "the repetitions scatter more than they differ (see the interval)")
VARIANTS_TEST = ("test: paired t on the log ratios when every repetition has both sides (the "
                 "variants of a repetition ran back to back), else Welch's t on the log values")
RUNS_TEST = ("runs compared point by point (the same task, parameters, workers, placement and "
             "variant); repetitions of different runs did not run together: Welch's t on the "
             "log values")
NOT_INTERLEAVED = ("{} ran one after the other, not interleaved (a variant with setup or "
                   "teardown): drift over the run is not cancelled and may show as a difference")


def _own_unit(v: Value | None) -> str:
    """A value in the unit its own column would take (rows of several figures)."""
    if v is None:
        return DASH
    unit, div = column_unit(v.unit, [v.median])
    return f"{num(v.median / div)} {unit}".strip()


def _figure_text(c: Comparison) -> str:
    """"bandwidth, aggregate, higher is better": the figure, its scope, its direction."""
    v = c.base.value or c.other.value
    scope = f", {v.scope}" if v is not None else ""
    return f"{c.figure.label}{scope}, {c.figure.direction}".replace("\n", " ")


def _disagree(c: Comparison) -> bool:
    """Whether the medians shown and the factor say opposite things (a side faster by its
    median, slower by its geometric mean): a scatter the interval shows."""
    a, b, e = c.base.value, c.other.value, c.estimate
    if a is None or b is None or e is None or not a.median or a.median == b.median \
            or e.ratio == 1:
        return False
    return (b.median > a.median) != (e.ratio > 1)


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
    unit_text = ""
    value = _own_unit
    if len(figs) == 1:
        shown = [v for c in tc.rows for v in (c.base.value, c.other.value) if v is not None]
        unit, div = column_unit(shown[0].unit if shown else "", [v.median for v in shown])
        unit_text = f", {unit}" if unit else ""
        value = lambda v: DASH if v is None else num(v.median / div)   # noqa: E731
    cols = keys + side + (["figure"] if len(figs) > 1 else []) + [
        f"baseline\nmedian{unit_text}", f"compared\nmedian{unit_text}",
        "faster or\nslower\n[95% CI]", "verdict", "n (test)"]
    rows = []
    for c in tc.rows:
        b = c.base.point
        row = [str(b.workers)] + [fmts[k](b.params[k]) if k in b.params else DASH
                                  for k in varying]
        row += [b.variant or DASH] if with_variant else []
        row += [_label(c, b.params)] if side else []
        row += [_figure_text(c)] if len(figs) > 1 else []
        row += [value(c.base.value), value(c.other.value),
                overhead_text(c), c.verdict, _n_text(c)]
        rows.append(row)
    rows += _task_rows(tc, len(keys), len(side), len(figs) > 1)
    what = f"{', '.join(labels)} against {tc.baseline}"
    fig_text = _figure_text(tc.rows[0]) if len(figs) == 1 else "figure per row"
    notes = [RUNS_TEST if runs else VARIANTS_TEST]
    late = [c.other.label for c in tc.rows if not c.interleaved]
    if late:
        notes.append(NOT_INTERLEAVED.format(f"{tc.baseline} and {', '.join(dict.fromkeys(late))}"))
    split = sum(_disagree(c) for c in tc.rows)
    if split:
        notes.append(DISAGREE.format(plural(split, "row")))
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


def run_tables(info: RunInfo, read: RunRead) -> list[Table]:
    """The comparison tables of a run's variants, then its references, if it has any (from
    its phases' aggregates: analysis/run_read.py)."""
    run = RunData.of(info.run_id, info, read)
    tables = [comparison_table(tc) for tc in within_run(run)]
    if tables:       # the definitions once, below the first
        tables[0].notes.append(DEFINITIONS)
    checks = evaluate(run)
    if checks:
        tables.append(reference_table(checks))
    return tables


def compare_view(runs: list[RunData], tcs: list[TaskComparison], checks: list[RefCheck],
                 ignore: tuple[str, ...] = ()) -> RunView:
    """What `manybench compare` prints: the runs, a table per task, the newest run's
    references, and the points it could not pair."""
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
    notes = [f"points paired with {', '.join(ignore)} left out (--ignore)"] if ignore else []
    words = PointWords(runs)
    for u in unmatched(runs, ignore):
        notes += words.unmatched(runs[0].label, u)
    return RunView(title=f"compare {names} against {runs[0].label}", header=header, notes=notes,
                   tables=tables, legend=DEFINITIONS)


def as_json(runs: list[RunData], tcs: list[TaskComparison], ignore: tuple[str, ...] = ()
            ) -> dict[str, Any]:
    """`compare --json`: the runs, per task each compared point with both sides' Values (as
    `report --json` gives them), the factor and its interval, the verdict; and per later run
    the points that could not be paired, with the other run's nearest and what differs."""
    def side(s: Side) -> dict[str, Any]:
        return {"label": s.label, "point": point_of(s.point.point), "variant": s.point.variant,
                "workers": s.point.workers, "params": s.point.params,
                "value": None if s.value is None else s.value.as_dict(),
                "geomean": s.geomean(), "n": len(s.values)}

    def unp(x: Unpaired) -> dict[str, Any]:
        return {"task": x.point.task, "fields": x.point.fields,
                "nearest": None if x.nearest is None else x.nearest.fields,
                "differ": [list(d) for d in x.differ]}
    rows = []
    for tc in tcs:
        for c in tc.rows:
            e = c.estimate
            rows.append({"task": tc.task, "figure": c.figure.name, "label": c.figure.label,
                         "direction": c.figure.direction, "baseline": side(c.base),
                         "compared": side(c.other),
                         "ratio": None if e is None else e.ratio,
                         "interval": None if e is None or e.low is None else [e.low, e.high],
                         "times": c.times(), "verdict": c.verdict, "n": _n_text(c)})
    return {"runs": [{"label": r.label, "source": r.source, "run": r.info.run_id,
                      "name": r.info.name, "status": r.info.status} for r in runs],
            "ignore": list(ignore), "comparisons": rows,
            "unpaired": [{"run": u.label, "lack": [unp(x) for x in u.lack],
                          "extra": [unp(x) for x in u.extra]} for u in unmatched(runs, ignore)]}
