"""Comparisons: each variant against the baseline, point by point, and runs against runs.

The figure compared is the points' headline figure (analysis/headfigure.py), the first of
their task's headline names both sides have with a direction (a rate higher, a time lower):
the kernel's declared headline (null: sync overhead; io.*: aggregate bandwidth; meta.*:
aggregate ops/s; cpu.dgemm: gflops summed over the slots ...), else a command's first
extracted metric, then its per-slot time. Latency (merged over all of a point's operations)
has no value per repetition and is passed over, as are a [[concurrent]] group's ops (of
different kinds). Each side shows that figure's Value, as `report` shows it
(analysis/values.py: the median over phases, or over slots for a slot's own metric); the
ratio is taken over one value per phase (headfigure.phase_value), only from a phase with ok
records and only when positive (ratios are taken on logs).

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
before keys had "pair" match keys equal once "variant" is left out. Across runs: points that
are the same measurement (analysis/joins.py: task, variant, workers, placement and every
parameter; `ignore` leaves fields out); those that found no partner are listed with the
other run's nearest point and the fields that differ (unmatched).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..kernels import figures as F
from ..model import GROUP_KERNEL
from ..results.contract import RunInfo, StoredPhase
from ..results.store import Store
from . import headfigure
from .joins import Identity, Unpaired, field_names, identity, split_key, unpaired
from .aggregates import PartAgg
from .points import PointSummary
from .run_read import RunRead
from .run_read import read as read_run
from .significance import Estimate, paired, welch
from .stats import Spread
from .values import Value, point_values

NOT_SIGNIFICANT = "not significant"
N_TOO_SMALL = "n too small"
WORSE = "significantly worse"
BETTER = "significantly better"
NO_DATA = "no data"


@dataclass(frozen=True)
class Figure:
    """A declared figure (kernels/figures.py) as compared: its name (`report --metrics`), the
    label tables head it with, and which way is better."""
    name: str
    label: str
    higher_is_better: bool

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


def _declared(f: F.Figure) -> Figure:
    return Figure(f.name, f.title, f.direction == F.HIGHER)


SYNC = _declared(F.SYNC_OVERHEAD)
ELAPSED = _declared(F.ELAPSED)          # per-slot time
BANDWIDTH = _declared(F.BANDWIDTH)
OPS = _declared(F.OPS_RATE)


@dataclass
class Side:
    """One side of a comparison: a point of a variant (or of a run) and its values."""
    label: str                          # variant name, or run label
    point: PointSummary
    values: dict[int, float]            # phase index -> figure
    reps: dict[int, int]                # phase index -> repetition
    value: Value | None = None          # the figure as `report` shows it (values.py)

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


# -- the figure ----------------------------------------------------------------------------------
def choose_figure(a: PointSummary, b: PointSummary, va: headfigure.Values | None = None,
                  vb: headfigure.Values | None = None) -> Figure:
    """The figure both points are compared on (see the module docstring); `va`, `vb`: their
    Values (values.point_values), made here when not given."""
    va = point_values(a) if va is None else va
    vb = point_values(b) if vb is None else vb
    for name in headfigure.headline_names([a]):
        if not (va.get(name) and vb.get(name)) or not headfigure.per_phase(name):
            continue
        if name == F.OPS_RATE.name and a.kernel == GROUP_KERNEL:
            continue       # a create is no read: a group's ops are not one kind
        better = headfigure.direction(va[name][0])
        if better:
            return Figure(name, va[name][0].label, better == F.HIGHER)
    return ELAPSED


# -- one run's data ----------------------------------------------------------------------------
@dataclass
class RunData:
    label: str                          # how tables name the run (A, B, ... or its id)
    info: RunInfo
    summaries: list[PointSummary]
    parts: Mapping[int, Sequence[PartAgg]]   # each phase's aggregates (run_read.RunRead)
    phases: list[StoredPhase]
    source: str = ""                    # the argument it was opened from (compare)
    spreads: dict[str, dict[str, Spread]] | None = None   # metric_spreads (run_read)

    def __post_init__(self) -> None:
        self.parts = self.parts or {}
        self.rep_of = {p.index: p.rep for p in self.phases}
        self._values: dict[str, headfigure.Values] | None = None

    @classmethod
    def of(cls, label: str, info: RunInfo, run: RunRead, source: str = "") -> RunData:
        return cls(label, info, run.summaries, run.parts, run.phases, source, run.spreads)

    @property
    def values(self) -> dict[str, headfigure.Values]:
        """Per point key, its figures as the report's tables and `report --json` give them;
        made on first use (a run without variants compares nothing within itself)."""
        if self._values is None:
            spreads = self.spreads or {}
            self._values = {s.point: point_values(s, spreads.get(s.point))
                            for s in self.summaries}
        return self._values

    def side(self, s: PointSummary, fig: Figure, label: str) -> Side:
        values = {}
        for f in s.phase_figures:
            v = headfigure.phase_value(s, fig.name, f, self.parts.get(f.index, ()))
            if v is not None and v > 0:
                values[f.index] = float(v)
        shown = self.values.get(s.point, {}).get(fig.name)
        return Side(label, s, values, {i: self.rep_of.get(i, 0) for i in values},
                    shown[0] if shown else None)


def load(store: Store, run: RunInfo, label: str = "") -> RunData:
    """A stored run as compared: from its aggregates (run_read.py), never its records."""
    return RunData.of(label or run.run_id, run, read_run(store, run.run_id))


def _match_id(point: str, leave_out: tuple[str, ...]) -> str:
    """Within a run: the same position in the task ("pair"), else the key without
    `leave_out` (runs stored before keys had "pair")."""
    key, suffix = split_key(point)
    if "pair" in key:
        key = {"task": key.get("task"), "pair": key["pair"]}
    key = {k: v for k, v in key.items() if k not in leave_out}
    return json.dumps(key, sort_keys=True, default=str) + suffix


_Pair = tuple[str, tuple["RunData", PointSummary, str], tuple["RunData", PointSummary, str], bool]


def _comparisons(pairs: list[_Pair]) -> list[Comparison]:
    """The pairs of a task compared. A pair with no figure on a side (every phase of the
    point failed) takes the figure of the task's other pairs, not the fallback: a task's
    table keeps one figure, in one unit."""
    def values(side: tuple[RunData, PointSummary, str]) -> headfigure.Values:
        return side[0].values.get(side[1].point) or {}
    figs = [choose_figure(b[1], o[1], values(b), values(o)) for _, b, o, _ in pairs]
    known = [f for f, (_, b, o, _) in zip(figs, pairs) if values(b) and values(o)]
    common = Counter(known).most_common(1)[0][0] if known else None
    return [_compare(task, b, o, pair, f if common is None or (values(b) and values(o))
                     else common)
            for f, (task, b, o, pair) in zip(figs, pairs)]


def _compare(task: str, base: tuple[RunData, PointSummary, str],
             other: tuple[RunData, PointSummary, str], pair: bool, fig: Figure) -> Comparison:
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
        tc.rows = _comparisons([(task, (run, vs[base], base), (run, vs[v], v), True)
                                for vs in points.values() if base in vs
                                for v in order if v != base and v in vs])
        if tc.rows:
            out.append(tc)
    return out


# -- runs against runs -------------------------------------------------------------------------
def _identities(run: RunData) -> list[Identity]:
    return [identity(s.point, s.task) for s in run.summaries]


def across_runs(runs: list[RunData], ignore: tuple[str, ...] = ()) -> list[TaskComparison]:
    """Each later run against the first, point by point (the same measurement: joins.py, the
    fields in `ignore` left out). Repetitions of different runs did not run together: always
    Welch."""
    base, others = runs[0], runs[1:]
    index: dict[str, PointSummary] = {}
    for s, ident in zip(base.summaries, _identities(base)):
        index.setdefault(ident.id(ignore), s)
    by_task: dict[str, list[_Pair]] = {}
    for run in others:
        for s, ident in zip(run.summaries, _identities(run)):
            b = index.get(ident.id(ignore))
            if b is not None:
                by_task.setdefault(s.task, []).append(
                    (s.task, (base, b, base.label), (run, s, run.label), False))
    order = {s.point: i for i, s in enumerate(base.summaries)}
    out = []
    for task, pairs in by_task.items():     # point by point, each point's runs together
        pairs.sort(key=lambda x: order[x[1][1].point])
        out.append(TaskComparison(task, base.label, _comparisons(pairs)))
    return out


@dataclass
class Unmatched:
    """What a later run and the first could not pair: the first's points the later run lacks
    and the later run's own the first lacks, each with the other's nearest point."""
    label: str
    lack: list[Unpaired]
    extra: list[Unpaired]


def unmatched(runs: list[RunData], ignore: tuple[str, ...] = ()) -> list[Unmatched]:
    """Per later run, the points it and the first could not pair (joins.unpaired)."""
    first = _identities(runs[0])
    out = []
    for r in runs[1:]:
        mine = _identities(r)
        out.append(Unmatched(r.label, unpaired(first, mine, ignore), unpaired(mine, first, ignore)))
    return out


def check_ignore(runs: list[RunData], ignore: tuple[str, ...]) -> None:
    """CompareError naming an `ignore` field that no point of the runs has."""
    known = field_names(i for r in runs for i in _identities(r))
    bad = [n for n in ignore if n not in known]
    if bad:
        raise CompareError(f"--ignore: no point of these runs has {', '.join(map(repr, bad))}; "
                           f"their fields: {', '.join(known)}")


def check_common(runs: list[RunData], tcs: list[TaskComparison],
                 why: Callable[[RunData], str] = lambda run: "") -> None:
    """CompareError naming each run that shares no point with the first, with `why`: what
    differs (report/comparison.py words it)."""
    seen = {c.other.label for tc in tcs for c in tc.rows}
    lonely = [r for r in runs[1:] if r.label not in seen]
    if lonely:
        raise CompareError("; ".join(
            f"run {r.label} ({r.info.run_id}) has no point in common with run {runs[0].label} "
            f"({runs[0].info.run_id}): points match on task, parameters, workers, placement "
            f"and variant{why(r)}" for r in lonely))


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
