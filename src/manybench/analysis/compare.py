"""Comparisons: each variant against the baseline, point by point, and runs against runs.

The figure compared (one value per phase, i.e. per repetition), by what the task runs:
  sync-only kernels (null)   sync overhead (the phase's window), lower is better
  commands                   a rate metric the task extracts (rates.summed: declared so,
                             or named *_mb_s, *_gflops, *_iops ...) summed over
                             the phase's slots, higher is better; else the phase's elapsed
                             (last end - first start), lower is better
  throughput kernels         the kernel's own main figure summed over the phase's slots
                             (gflops, mflops, triad_mb_s ...: efficiency.RULE_ORDER), else
                             aggregate bandwidth, else aggregate ops/s; higher is better
  [[concurrent]] groups      aggregate bandwidth when they move bytes, else elapsed (their
                             tasks' ops are of different kinds); each member task as above
A value is taken only from a phase with ok records (failed slots leave out their stamps), and
only when it is positive (ratios are taken on logs).

Ratio = variant / baseline of geometric means, with a 95% interval (significance.py: paired
when every repetition has both sides, as the A B A B expansion gives; Welch otherwise and
always across runs). Overhead = how much more the variant costs in the figure's own
direction: ratio - 1 for a time, baseline / variant - 1 for a rate, so a command 10% slower
shows +10% whether its elapsed or its rate is compared. Reports word it as hyperfine does:
"1.10 times slower [1.08, 1.12]", "17.6 times faster [16.9, 18.4]" (the cost ratio, or its
inverse, with its interval). Verdicts: "n too small" (fewer than significance.MIN_N = 3
values on a side: no interval worth reading), "not significant" (the interval holds 1),
else "significantly worse" or "significantly better".

Matching within a run: points with the same (task, "pair") in their key are the same point
under different variants (a variant may `set` params, so params may differ); runs stored
before keys had "pair" match keys equal once "variant" is left out. Across runs: keys equal
once "pair" is left out (plans may add points), variant included.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..kernels import kernel
from ..model import GROUP_KERNEL
from ..record import Record
from ..results.contract import RunInfo, StoredPhase
from ..results.store import Store
from .efficiency import RULE_ORDER
from .rates import summed
from .phase_figures import NS, PhaseFigures
from .points import PointSummary, summarize
from .significance import Estimate, paired, welch

NOT_SIGNIFICANT = "not significant"
N_TOO_SMALL = "n too small"
WORSE = "significantly worse"
BETTER = "significantly better"
NO_DATA = "no data"


@dataclass(frozen=True)
class Figure:
    name: str                  # as reports show it
    source: str                # "sync" | "elapsed" | "bandwidth" | "ops" | "metric"
    higher_is_better: bool
    metric: str = ""           # the metric name when source == "metric"

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


SYNC = Figure("sync overhead", "sync", False)
ELAPSED = Figure("elapsed", "elapsed", False)          # last end - first start
BANDWIDTH = Figure("aggregate bandwidth", "bandwidth", True)
OPS = Figure("aggregate ops/s", "ops", True)


@dataclass
class Side:
    """One side of a comparison: a point of a variant (or of a run) and its values."""
    label: str                          # variant name, or run label
    point: PointSummary
    values: dict[int, float]            # phase index -> figure
    reps: dict[int, int]                # phase index -> repetition

    def by_rep(self) -> dict[int, float]:
        return {self.reps[i]: v for i, v in self.values.items()}

    def geomean(self) -> float | None:
        vs = list(self.values.values())
        return math.exp(sum(map(math.log, vs)) / len(vs)) if vs else None


@dataclass
class Comparison:
    task: str
    figure: Figure
    base: Side
    other: Side
    estimate: Estimate | None           # None: a side has no value
    interleaved: bool = True            # False: one side ran wholly before the other

    @property
    def verdict(self) -> str:
        e = self.estimate
        if e is None:
            return NO_DATA
        if e.n_too_small:
            return N_TOO_SMALL
        if not e.significant:
            return NOT_SIGNIFICANT
        return WORSE if self.cost(e.ratio) > 1 else BETTER

    def cost(self, ratio: float) -> float:
        """The ratio turned so that above 1 is worse (more time, less rate)."""
        return 1.0 / ratio if self.figure.higher_is_better else ratio

    @property
    def overhead(self) -> float | None:
        """How much worse the variant is, as a fraction (0.10 = 10% worse)."""
        return None if self.estimate is None else self.cost(self.estimate.ratio) - 1.0

    @property
    def overhead_interval(self) -> tuple[float, float] | None:
        e = self.estimate
        if e is None or e.low is None or e.high is None:
            return None
        a, b = sorted((self.cost(e.low) - 1.0, self.cost(e.high) - 1.0))
        return a, b

    def times(self) -> str:
        """How many times faster or slower the variant is, with its 95% interval, as
        hyperfine words it: "1.10 times slower [1.08, 1.12]"; "[n too small]" without one."""
        if self.estimate is None:
            return ""
        cost = self.cost(self.estimate.ratio)
        ci = self.overhead_interval
        return times_text(cost, None if ci is None else (ci[0] + 1.0, ci[1] + 1.0))

    def line(self) -> str:
        """One line for stderr: the point, the verdict, how many times faster or slower."""
        b = self.base.point
        where = " ".join([f"workers={b.workers}"]
                         + [f"{k}={v}" for k, v in b.params.items() if k != "dir"]
                         + ([f"variant={b.variant}"] if b.variant and b.variant != self.base.label
                            else []))
        how = f", {self.times()}" if self.estimate is not None else ""
        return (f"{self.task} at {where}: {self.other.label} against {self.base.label}: "
                f"{self.verdict} ({self.figure.name}{how})")


def _factor(x: float) -> str:
    """Three significant digits, trailing zeros kept: 1.10, 17.6, 250."""
    r = float(f"{x:.3g}")
    return f"{r:.2f}" if r < 10 else f"{r:.1f}" if r < 100 else f"{r:.0f}"


def times_text(cost: float, interval: tuple[float, float] | None, bare: bool = False) -> str:
    """A cost ratio (above 1: worse) as "1.10 times slower [1.08, 1.12]" or "17.6 times faster
    [16.9, 18.4]"; the interval on the same scale, "[n too small]" when there is none."""
    slower = cost >= 1.0
    f = cost if slower else 1.0 / cost
    text = f"{_factor(f)} times {'slower' if slower else 'faster'}"
    if bare:
        return text
    if interval is None:
        return text + f" [{N_TOO_SMALL}]"
    lo, hi = sorted(interval if slower else (1.0 / interval[1], 1.0 / interval[0]))
    return text + f" [{_factor(lo)}, {_factor(hi)}]"


@dataclass
class TaskComparison:
    task: str
    baseline: str                       # the baseline variant or run label
    rows: list[Comparison] = field(default_factory=list)

    def verdicts(self) -> dict[str, str]:
        """Per compared label, the whole task's verdict over its points."""
        out: dict[str, str] = {}
        for label in dict.fromkeys(c.other.label for c in self.rows):
            out[label] = task_verdict([c.verdict for c in self.rows if c.other.label == label])
        return out


def task_verdict(verdicts: list[str]) -> str:
    """'significantly worse at 3 of 4 points', 'mixed: ...', 'not significant at any of 2
    points'; one point: its own verdict."""
    n = len(verdicts)
    if n == 1:
        return verdicts[0]
    worse, better = verdicts.count(WORSE), verdicts.count(BETTER)
    small = verdicts.count(N_TOO_SMALL) + verdicts.count(NO_DATA)
    if worse and better:
        return f"mixed: worse at {worse}, better at {better} of {n} points"
    if worse or better:
        return f"{WORSE if worse else BETTER} at {worse or better} of {n} points"
    if small == n:
        return f"{N_TOO_SMALL} at every point"
    return f"{NOT_SIGNIFICANT} at any of {n} points" + (f" ({small} {N_TOO_SMALL})" if small else "")


# -- the figure and its values ------------------------------------------------------------------
def _rate_metrics(s: PointSummary) -> list[str]:
    return sorted(m for m in s.metrics if summed(s.kernel, m))


def choose_figure(a: PointSummary, b: PointSummary) -> Figure:
    """The figure both points are compared on (see the module docstring)."""
    traits = kernel(a.kernel)
    if traits.sync_only:
        return SYNC
    both = set(a.metrics) & set(b.metrics)
    if traits.runs_child:
        rates = [m for m in _rate_metrics(a) if m in both]
        return Figure(rates[0], "metric", True, rates[0]) if rates else ELAPSED
    for m in RULE_ORDER:
        if m in both:
            return Figure(m, "metric", True, m)
    if a.bandwidth is not None and b.bandwidth is not None:
        return BANDWIDTH
    # a [[concurrent]] group's ops are of different kinds (a create is no read): its elapsed
    if a.kernel == GROUP_KERNEL or a.ops_rate is None or b.ops_rate is None:
        return ELAPSED
    return OPS


def phase_value(fig: Figure, f: PhaseFigures, recs: Iterable[Record]) -> float | None:
    """The figure of one phase; None when the phase has none (no ok record, not positive)."""
    if not f.ok:
        return None
    v: float | None
    if fig.source == "sync":
        v = f.sync_overhead_ns
    elif fig.source == "elapsed":
        v = f.window_ns / NS if f.window_ns is not None else None
    elif fig.source == "bandwidth":
        v = f.bandwidth
    elif fig.source == "ops":
        v = f.ops_rate
    else:
        vals = [r.metrics[fig.metric] for r in recs
                if r.status == "ok" and _number(r.metrics.get(fig.metric))]
        v = float(sum(vals)) if vals else None
    return float(v) if v is not None and v > 0 else None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# -- one run's data ----------------------------------------------------------------------------
@dataclass
class RunData:
    label: str                          # how tables name the run (A, B, ... or its id)
    info: RunInfo
    summaries: list[PointSummary]
    records: list[Record]
    phases: list[StoredPhase]
    source: str = ""                    # the argument it was opened from (compare)

    def __post_init__(self) -> None:
        self.by_phase: dict[int, list[Record]] = {}
        for r in self.records:
            self.by_phase.setdefault(r.phase, []).append(r)
        self.rep_of = {p.index: p.rep for p in self.phases}
        for r in self.records:           # phases the phases table does not know
            self.rep_of.setdefault(r.phase, r.rep)

    def side(self, s: PointSummary, fig: Figure, label: str) -> Side:
        values = {}
        for f in s.phase_figures:
            v = phase_value(fig, f, self.by_phase.get(f.index, []))
            if v is not None:
                values[f.index] = v
        return Side(label, s, values, {i: self.rep_of.get(i, 0) for i in values})


def load(store: Store, run: RunInfo, label: str = "") -> RunData:
    records = store.records(run.run_id)
    phases = store.phases(run.run_id)
    return RunData(label or run.run_id, run, summarize(records, phases), records, phases)


def split_key(point: str) -> tuple[dict, str]:
    """A point key as a dict, and the task suffix of a [[concurrent]] member ("...}#write")."""
    try:
        key = json.loads(point)
        return (key, "") if isinstance(key, dict) else ({"key": point}, "")
    except ValueError:
        i = point.rfind("}#")
        try:
            return json.loads(point[:i + 1]), point[i + 2:]
        except ValueError:
            return {"key": point}, ""


def _match_id(point: str, leave_out: tuple[str, ...]) -> str:
    key, suffix = split_key(point)
    if "pair" in key and "pair" not in leave_out:   # the same position in the task
        key = {"task": key.get("task"), "pair": key["pair"]}
    key = {k: v for k, v in key.items() if k not in leave_out}
    return json.dumps(key, sort_keys=True, default=str) + suffix


def _compare(task: str, base: tuple[RunData, PointSummary, str],
             other: tuple[RunData, PointSummary, str], pair: bool) -> Comparison:
    fig = choose_figure(base[1], other[1])
    a = base[0].side(base[1], fig, base[2])
    b = other[0].side(other[1], fig, other[2])
    est = None
    if a.values and b.values:
        ra, rb = a.by_rep(), b.by_rep()
        if pair and len(ra) == len(a.values) and set(ra) == set(rb):   # every rep has both
            reps = sorted(ra)
            est = paired([ra[r] for r in reps], [rb[r] for r in reps])
        else:
            est = welch(list(a.values.values()), list(b.values.values()))
    # phase indexes give the run order: one side wholly before the other is a block
    interleaved = not pair or min(len(a.values), len(b.values)) < 2 or not (
        max(a.values) < min(b.values) or max(b.values) < min(a.values))
    return Comparison(task, fig, a, b, est, interleaved)


# -- variants within a run ---------------------------------------------------------------------
def variant_order(plan_raw: dict) -> tuple[list[str], str | None]:
    """The plan's variant names in order, and its `baseline` (None: the first)."""
    items = plan_raw.get("variant") if isinstance(plan_raw.get("variant"), list) else []
    names = [v["name"] for v in items if isinstance(v, dict) and isinstance(v.get("name"), str)]
    base = plan_raw.get("baseline")
    return names, base if isinstance(base, str) else None


def within_run(run: RunData) -> list[TaskComparison]:
    """Every non-baseline variant against the baseline, per task and point. The baseline is
    the plan's `baseline`, else its first variant; where that variant does not run a task,
    the first variant that does."""
    names, wanted = variant_order(run.info.plan_raw)
    groups: dict[str, dict[str, dict[str, PointSummary]]] = {}   # task -> id -> variant -> s
    for s in run.summaries:
        if not s.variant:                 # tasks no variant applies to: nothing to compare
            continue
        mid = _match_id(s.point, ("variant",))
        groups.setdefault(s.task, {}).setdefault(mid, {})[s.variant] = s
    out = []
    for task, points in groups.items():
        present = list(dict.fromkeys(v for vs in points.values() for v in vs))
        order = [n for n in names if n in present] + [v for v in present if v not in names]
        base = wanted if wanted in order else order[0]
        tc = TaskComparison(task, base)
        for vs in points.values():
            if base not in vs:
                continue
            for v in order:
                if v != base and v in vs:
                    tc.rows.append(_compare(task, (run, vs[base], base), (run, vs[v], v), True))
        if tc.rows:
            out.append(tc)
    return out


# -- runs against runs -------------------------------------------------------------------------
def across_runs(runs: list[RunData]) -> list[TaskComparison]:
    """Each later run against the first, point by point (the same key, "pair" left out).
    Repetitions of different runs did not run together: always Welch."""
    base, others = runs[0], runs[1:]
    index = {_match_id(s.point, ("pair",)): s for s in base.summaries}
    by_task: dict[str, TaskComparison] = {}
    for run in others:
        for s in run.summaries:
            b = index.get(_match_id(s.point, ("pair",)))
            if b is None:
                continue
            tc = by_task.setdefault(s.task, TaskComparison(s.task, base.label))
            tc.rows.append(_compare(s.task, (base, b, base.label), (run, s, run.label), False))
    order = {s.point: i for i, s in enumerate(base.summaries)}
    for tc in by_task.values():     # point by point, each point's runs together
        tc.rows.sort(key=lambda c: order[c.base.point.point])
    return list(by_task.values())


def unmatched(runs: list[RunData]) -> dict[str, tuple[int, int]]:
    """Per later run: (points of the first run it lacks, points of its own the first lacks)."""
    ids = [{_match_id(s.point, ("pair",)) for s in r.summaries} for r in runs]
    return {r.label: (len(ids[0] - mine), len(mine - ids[0])) for r, mine in zip(runs[1:], ids[1:])}


def check_common(runs: list[RunData], tcs: list[TaskComparison]) -> None:
    """CompareError naming each run that shares no point with the first."""
    seen = {c.other.label for tc in tcs for c in tc.rows}
    lonely = [r for r in runs[1:] if r.label not in seen]
    if lonely:
        raise CompareError("; ".join(
            f"run {r.label} ({r.info.run_id}) has no point in common with run {runs[0].label} "
            f"({runs[0].info.run_id}): points match on task, parameters, workers, placement "
            "and variant" for r in lonely))


# -- opening runs for `manybench compare` ------------------------------------------------------
class CompareError(Exception):
    """Bad input to `compare`: the message names the argument (exit status 2)."""


def open_runs(args: list[str]) -> list[RunData]:
    """Each argument (a results directory for its latest run, or DIR:RUN_ID) loaded, labelled
    A, B, C ... in the order given; CompareError naming the argument when one cannot be."""
    from ..results.diff import DiffError, open_run
    if len(args) < 2:
        raise CompareError("compare needs two runs or more: DIR_A DIR_B [DIR ...] (DIR_A is "
                           "the baseline; DIR:RUN_ID picks a run)")
    out = []
    for i, arg in enumerate(args):
        name = f"DIR_{chr(65 + i)}" if i < 26 else f"DIR #{i + 1}"
        try:
            store, info = open_run(arg, name)
        except DiffError as e:
            raise CompareError(str(e)) from None
        try:
            run = load(store, info, chr(65 + i) if i < 26 else f"#{i + 1}")
            run.source = arg
            out.append(run)
        finally:
            store.close()
    return out


def regressions(tcs: list[TaskComparison]) -> list[Comparison]:
    """The comparisons whose variant (or run) is significantly worse than its baseline."""
    return [c for tc in tcs for c in tc.rows if c.verdict == WORSE]
