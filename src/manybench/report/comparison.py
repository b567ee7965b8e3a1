"""The comparison and reference tables (analysis/compare.py, analysis/reference.py) as Tables
that terminal.py and html.py lay out like the others."""
from __future__ import annotations

import math

from typing import Any

from ..analysis.compare import (Comparison, RunData, TaskComparison, Unmatched, task_verdict,
                                times_text, unmatched, within_run)
from ..analysis.joins import Identity, Unpaired
from ..analysis.points import PointSummary
from ..analysis.reference import FAIL, RefCheck, evaluate
from ..analysis.values import Value
from ..record import Record
from ..results.contract import RunInfo, StoredPhase
from .colunits import column_unit, num
from .formats import DASH, param_formatter, plural, swept
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
MAX_UNPAIRED = 10     # points listed per run that could not be paired; the rest counted
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
    words = _Words(runs)
    for u in unmatched(runs, ignore):
        notes += words.unmatched(runs[0].label, u)
    return RunView(title=f"compare {names} against {runs[0].label}", header=header, notes=notes,
                   tables=tables, legend=DEFINITIONS)


class _Words:
    """Points of the runs compared, named as a person reads them: task, workers and the
    fields in which the task's points differ (over every run), as plans write them."""

    def __init__(self, runs: list[RunData]) -> None:
        from ..analysis.joins import identity
        self.kernel: dict[str, str] = {}
        seen: dict[str, list[Identity]] = {}
        for r in runs:
            for s in r.summaries:
                i = identity(s.point, s.task)
                self.kernel.setdefault(i.task, s.kernel)
                seen.setdefault(i.task, []).append(i)
        self.swept = {task: _swept(ids) for task, ids in seen.items()}

    def value(self, task: str, name: str, v: Any) -> str:
        return param_formatter(self.kernel.get(task, ""), name.removeprefix("params."))(v)

    def point(self, p: Identity) -> str:
        shown = [k for k in self.swept.get(p.task, []) if k in p.fields]
        return " ".join([p.task] + [f"{k}={self.value(p.task, k, p.fields[k])}" for k in shown])

    def differ(self, task: str, diffs: list[tuple[str, Any, Any]], a: str, b: str,
               verb: bool = False) -> str:
        """"fsync (end in A, never in B)"; `verb`: "fsync differs (end in A, never in B)"."""
        return ", ".join(f"{k}{' differs' if verb else ''} ({self.value(task, k, x)} in {a}, "
                         f"{self.value(task, k, y)} in {b})" for k, x, y in diffs)

    def unmatched(self, a: str, u: Unmatched) -> list[str]:
        """A note per run: how many points were not paired, then a line for each (a point of
        one run and the other's nearest together, when each is the other's)."""
        b = u.label
        if not u.lack and not u.extra:
            return []
        head = ", ".join(x for x in (
            f"{plural(len(u.lack), 'point')} of {a} that {b} does not have" if u.lack else "",
            f"{plural(len(u.extra), 'point')} of {b} that {a} does not have" if u.extra else "")
            if x)
        lines = []
        named: set[str] = set()
        for side, other, items in ((a, b, u.lack), (b, a, u.extra)):
            for x in items:
                if x.point.id() not in named:
                    lines.append(self._line(x, side, other, side == a, named))
        more = len(lines) - MAX_UNPAIRED
        lines = lines[:MAX_UNPAIRED] + ([f"... and {more} more"] if more > 0 else [])
        return [f"not compared: {head}:"] + [f"  {line}" for line in lines]

    def _line(self, x: Unpaired, side: str, other: str, baseline: bool, named: set[str]
              ) -> str:
        """One unpaired point of `side` (the baseline run or not) and its nearest in
        `other`; values of the differing fields are given baseline first."""
        named.add(x.point.id())
        me = f"{self.point(x.point)} ({side})"
        if x.nearest is None:
            return f"{me}: {other} has no point of task {x.point.task}"
        first, second = (side, other) if baseline else (other, side)
        diffs = x.differ if baseline else [(k, q, p) for k, p, q in x.differ]
        them = f"{self.point(x.nearest)} ({other})"
        if x.one is not None:
            named.add(x.nearest.id())
            return (f"{me} and {them}: only {self.differ(x.point.task, diffs, first, second, True)}"
                    f"; --ignore {x.one} pairs them")
        return (f"{me}: the nearest of {other}, {them}, differs in "
                f"{self.differ(x.point.task, diffs, first, second)}")

    def why(self, runs: list[RunData], ignore: tuple[str, ...]):
        """For compare's exit 2: what differs between a run and the first, in a few words."""
        by_label = {u.label: u for u in unmatched(runs, ignore)}
        a = runs[0].label

        def text(run: RunData) -> str:
            u = by_label[run.label]
            ones = {x.one for x in u.lack}
            if u.lack and None not in ones and len(ones) == 1:
                name = ones.pop()
                pairs = list(dict.fromkeys(self.differ(x.point.task, x.differ, a, run.label)
                                           for x in u.lack))
                return f"; they differ in {'; '.join(pairs)}: --ignore {name} pairs them"
            lines = self.unmatched(a, u)
            return "; " + " ".join(line.strip() for line in lines[1:4]) if lines else ""
        return text


def _swept(points: list[Identity]) -> list[str]:
    """workers first, then the fields whose values differ between the points."""
    names = list(dict.fromkeys(k for p in points for k in p.fields))
    dump = lambda v: repr(v)   # noqa: E731
    varying = [k for k in names if len({dump(p.fields.get(k)) for p in points}) > 1]
    return ["workers"] + [k for k in varying if k != "workers"]


def unpaired_why(runs: list[RunData], ignore: tuple[str, ...] = ()):
    """The words check_common adds to its message: what differs between each lonely run and
    the first."""
    return _Words(runs).why(runs, ignore)


def as_json(runs: list[RunData], tcs: list[TaskComparison], ignore: tuple[str, ...] = ()
            ) -> dict[str, Any]:
    """`compare --json`: the runs, per task each compared point with both sides' Values (as
    `report --json` gives them), the factor and its interval, the verdict; and per later run
    the points that could not be paired, with the other run's nearest and what differs."""
    def side(c: Comparison, s: Any) -> dict[str, Any]:
        return {"label": s.label, "point": s.point.point, "variant": s.point.variant,
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
                         "direction": c.figure.direction, "baseline": side(c, c.base),
                         "compared": side(c, c.other),
                         "ratio": None if e is None else e.ratio,
                         "interval": None if e is None or e.low is None else [e.low, e.high],
                         "times": c.times(), "verdict": c.verdict, "n": _n_text(c)})
    return {"runs": [{"label": r.label, "source": r.source, "run": r.info.run_id,
                      "name": r.info.name, "status": r.info.status} for r in runs],
            "ignore": list(ignore), "comparisons": rows,
            "unpaired": [{"run": u.label, "lack": [unp(x) for x in u.lack],
                          "extra": [unp(x) for x in u.extra]} for u in unmatched(runs, ignore)]}
