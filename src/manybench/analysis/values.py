"""Every figure of a point as numbers with their unit, scope and spread, made once from the
declarations (kernels/figures.py): what the report's tables write, the HTML figures draw
(report/plots/) and `report --json` gives (report/summary.py), so no two views disagree.

Per point, per figure its kernel declares (kernels/figures.py) or its records carry:
  scope "aggregate"  the whole phase's figure (sum(bytes) / window, or a declared rate summed
                     over the phase's slots, or a job's figure summed over its jobs), over
                     the point's phases
  scope "per slot"   aggregate / workers for a figure summed over slots; else each slot's
                     own value, over the point's ok records
  scope "per job"    aggregate / jobs for a summed figure of a parallel task running several
                     jobs (workers / ranks); a job's own figure (what its program printed, on
                     its first rank's record), over the jobs' records. A job's figure is never
                     split over its ranks: it has no per-slot value.
Each Value holds n, the median (nearest rank), min, max, p99 where the figure is a
distribution (its shape: percentiles, not a median and range), and for figures over phases
the 95% confidence interval of the mean (Student's t), left out (None, `interval_note` "n too
small") with fewer than MIN_INTERVAL_N phases: a t interval from two values spans orders of
magnitude and tells nothing.

Units (analysis/metric_units.py): byte rates in B/s, times in s, a metric whose name says
its unit in that unit (`fixed`: no column rescales it), another declared metric in its
declared unit (GFLOPS), else as given ("").
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Iterable

from ..status import OK_TEXT
from ..kernels import figures as F
from ..kernels import kernel
from ..record import Record
from ..results.contract import StoredPhase
from .metric_units import metric_unit, shown_unit   # noqa: F401 (metric_unit: report's)
from .rates import summed
from .points import PointSummary
from .stats import Dist, Spread

AGGREGATE, PER_SLOT, PER_JOB = (F.SCOPE_LABEL[s] for s in (F.PHASE, F.SLOT, F.JOB))
MIN_INTERVAL_N = 3
TOO_SMALL = "n too small"


@dataclass(frozen=True)
class Value:
    figure: str              # the figure's name (what `report --metrics` takes)
    label: str               # how every view heads it
    unit: str                # of every number here: "B/s", "ops/s", "s", "MB/s", "GFLOPS", ""
    scope: str               # AGGREGATE | PER_SLOT | PER_JOB (kernels/figures.SCOPE_LABEL)
    over: str                # "phases" | "records" | "operations": what n counts
    n: int
    median: float
    min: float
    max: float
    p99: float | None = None
    ci_low: float | None = None      # 95% CI of the mean over phases; None: see interval_note
    ci_high: float | None = None
    interval_note: str = ""          # why there is no interval ("n too small")
    direction: str = ""              # "higher" | "lower" is better | "" (not a performance)
    shape: str = F.VALUE             # F.VALUE: median (min-max) | F.DIST: percentiles
    fixed: bool = False              # its name says its unit: never rescaled
    quantiles: dict[str, float] | None = None   # a distribution's percentiles ("p90": x)

    def as_dict(self) -> dict:
        return asdict(self)

    def top(self) -> float:
        """The largest value it shows (its max, else median): what a column's unit fits."""
        return max(x for x in (self.max, self.p99, self.median) if x is not None)


def _interval(s: Spread | Dist, over: str) -> tuple[float | None, float | None, str]:
    """The 95% interval of the mean over repetitions (phases); over records, none: slots of
    one phase are not independent repetitions."""
    if over != "phases":
        return None, None, "over records, not repetitions"
    if s.n < MIN_INTERVAL_N or getattr(s, "ci_low", None) is None:
        return None, None, TOO_SMALL
    return s.ci_low, s.ci_high, ""     # type: ignore[union-attr]


def _of(fig: F.Figure, scope: str, over: str, s: Spread | Dist, factor: float = 1.0,
        unit: str | None = None, fixed: bool = False) -> Value:
    lo, hi, why = _interval(s, over)
    if isinstance(s, Dist):
        med, low, high, p99 = s.median, s.median if s.min is None else s.min, s.max, s.p99
    else:
        med, low, high, p99 = s.median, s.min, s.max, None
    f = factor
    return Value(fig.name, fig.title, fig.unit if unit is None else unit, scope, over, s.n,
                 med * f, low * f, high * f, None if p99 is None else p99 * f,
                 None if lo is None else lo * f, None if hi is None else hi * f, why,
                 fig.direction, fig.shape, fixed)


def _share(v: Value, among: int, scope: str = PER_SLOT) -> Value:
    """A summed figure's Value divided among `among` slots (or jobs)."""
    w = max(among, 1)
    div = lambda x: None if x is None else x / w   # noqa: E731
    return Value(v.figure, v.label, v.unit, scope, v.over, v.n, v.median / w, v.min / w,
                 v.max / w, div(v.p99), div(v.ci_low), div(v.ci_high), v.interval_note,
                 v.direction, v.shape, v.fixed)


def _ranks(p: PointSummary) -> int:
    ranks = p.params.get("ranks")
    return ranks if isinstance(ranks, int) and not isinstance(ranks, bool) and ranks > 0 else 0


def jobs_of(p: PointSummary) -> int:
    """How many jobs a parallel task's point ran at once (workers / ranks); 0 for a task
    that is not parallel, or whose ranks are single (a job is then a slot)."""
    ranks = _ranks(p)
    return max(p.workers // ranks, 1) if ranks >= 2 else 0


def _shares(v: Value, p: PointSummary, scope: str) -> list[Value]:
    """A summed figure's aggregate and its shares (kernels/figures.SHARES). A job's figure
    (scope JOB: what each job's program printed) is summed over the phase's jobs: one job's
    share where there were several, never a share per slot, which would split a job's
    figure over its ranks. A slot's: per job where the point ran several jobs of several
    ranks (before per slot: a narrow table keeps it longer), and per slot."""
    if scope == F.JOB:
        jobs = p.workers // _ranks(p) if _ranks(p) else 1
        return [v, *([_share(v, jobs, PER_JOB)] if jobs > 1 else [])]
    jobs = jobs_of(p)
    return [v, *([_share(v, jobs, PER_JOB)] if jobs > 1 else []), _share(v, p.workers)]


def _scope(fig: F.Figure) -> str:
    return F.SCOPE_LABEL[fig.scope]


def _computed(p: PointSummary) -> dict[str, list[Value]]:
    out: dict[str, list[Value]] = {}
    for fig, st in ((F.BANDWIDTH, p.bandwidth), (F.OPS_RATE, None if kernel(p.kernel).sync_only
                                                   else p.ops_rate),
                    (F.STONEWALL, p.stonewall_bandwidth)):
        if st is not None:
            out[fig.name] = _shares(_of(fig, AGGREGATE, "phases", st), p, fig.scope)
    for fig, d, over in ((F.SYNC_OVERHEAD, p.sync_overhead, "phases"),
                         (F.CYCLE, p.cycle, "phases"), (F.SKEW, p.skew, "phases"),
                         (F.LATENESS, p.lateness, "records")):
        if d is not None:
            out[fig.name] = [_of(fig, _scope(fig), over, d, 1e-9, "s")]
    qs = p.latency_us
    if qs.get("p50") is not None:
        med, p99 = qs["p50"], qs.get("p99")
        top = qs.get("max", p99 if p99 is not None else med)
        out[F.LATENCY.name] = [Value(
            F.LATENCY.name, F.LATENCY.title, "s", _scope(F.LATENCY), "operations", p.ok,
            med * 1e-6, med * 1e-6, top * 1e-6, None if p99 is None else p99 * 1e-6,
            direction=F.LATENCY.direction, shape=F.LATENCY.shape,
            quantiles={q: x * 1e-6 for q, x in qs.items()})]
    for fig, sp in ((F.ELAPSED, p.slot_elapsed), (F.OWN_BANDWIDTH, p.own_bandwidth),
                    (F.OWN_OPS_RATE, p.own_ops_rate)):
        if sp is not None:
            out[fig.name] = [_of(fig, _scope(fig), "records", sp)]
    return out


def point_values(p: PointSummary, slots: dict[str, Spread] | None = None
                 ) -> dict[str, list[Value]]:
    """Every figure of the point, by name: the computed ones, then each metric's (its
    aggregate first when it is summed over the slots or jobs). `slots`: each metric's spread
    over the point's ok records (metric_spreads), for the values of metrics not summed."""
    out = _computed(p)
    k = kernel(p.kernel)
    for name in p.metrics:
        fig = k.metric_figure(name)
        if fig.role in (F.HIDDEN, F.FLAG, F.TEXT):
            continue
        unit, factor, fixed = shown_unit(p.kernel, name, p.units)
        # a metric named as a computed figure the point has (a command's `latency`) keeps
        # the computed one's place: one name, one figure
        if name in out:
            fig = replace(fig, name=f"{name} (metric)")
        key = fig.name
        if summed(p.kernel, name) and name in p.metric_sums:
            v = _of(fig, AGGREGATE, "phases", p.metric_sums[name], factor, unit, fixed)
            out[key] = _shares(v, p, fig.scope)
            continue
        s = (slots or {}).get(name)
        if s is None:
            x = p.metrics[name]
            s = Spread(x, x, x, 1)
        # a slot's own value, or where the kernel declares it a job's (one per job) or the
        # phase's (one per phase), that one
        out[key] = [_of(fig, _scope(fig), "records", s, factor, unit, fixed)]
    return out


def metric_spreads(records: Iterable[Record], phases: Iterable[StoredPhase]
                   ) -> dict[str, dict[str, Spread]]:
    """Per point key, each metric's min / median / max over the point's ok records."""
    point_of = {p.index: p.point for p in phases}
    values: dict[str, dict[str, list[float]]] = {}
    for r in records:
        if r.status != OK_TEXT or r.phase not in point_of:
            continue
        per = values.setdefault(point_of[r.phase], {})
        for name, v in r.metrics.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                per.setdefault(name, []).append(v)
    return {p: {n: s for n, vs in m.items() if (s := Spread.of(vs)) is not None}
            for p, m in values.items()}
