"""Every figure of a point as numbers with their unit, scope and spread: what the report's
tables write and what `report --json` gives (report/summary.py), from one place, so the two
never disagree.

Per point, per figure its kernel declares (kernels/figures.py) or its records carry:
  scope "aggregate"  the whole phase's figure (sum(bytes) / window, or a declared rate summed
                     over the phase's slots), over the point's phases
  scope "per slot"   aggregate / workers for a summed figure; else each slot's own value,
                     over the point's ok records
  scope "per job"    aggregate / jobs for a summed figure of a parallel task running several
                     jobs of `ranks` ranks at once (workers / ranks jobs): one job's share
Each Value holds n, the median (nearest rank), min, max, p99 where the table shows it, and
for figures over phases the 95% confidence interval of the mean (Student's t), left out
(None, `interval_note` "n too small") with fewer than MIN_INTERVAL_N phases: a t interval
from two values spans orders of magnitude and tells nothing.

Units: byte rates in B/s, times in s, a declared metric in its declared unit (MB/s, GFLOPS),
another metric in the unit its name's ending says (report/colunits.py: rate -> B/s, time ->
s), else as given ("").
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

from ..kernels import figures as F
from ..kernels import kernel
from ..record import Record
from ..results.contract import StoredPhase
from .rates import summed
from .points import PointSummary
from .stats import Dist, Spread

AGGREGATE, PER_SLOT, PER_JOB = "aggregate", "per slot", "per job"
MIN_INTERVAL_N = 3
TOO_SMALL = "n too small"
# a unit that is a multiple of seconds is given in seconds
_TIMES = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
# name endings of undeclared metrics (as report/colunits.py reads them): unit, factor
_ENDINGS = (("_mb_s", "B/s", 1e6), ("_mbs", "B/s", 1e6), ("_gb_s", "B/s", 1e9),
            ("_kb_s", "B/s", 1e3), ("_mib_s", "B/s", 2.0**20), ("_gib_s", "B/s", 2.0**30),
            ("_kib_s", "B/s", 2.0**10), ("_bytes_s", "B/s", 1.0), ("_bps", "B/s", 1.0),
            ("_gbit_s", "B/s", 1e9 / 8), ("_mbit_s", "B/s", 1e6 / 8),
            ("_ops_s", "", 1.0), ("_per_s", "", 1.0),
            ("_ns", "s", 1e-9), ("_us", "s", 1e-6), ("_ms", "s", 1e-3), ("_seconds", "s", 1.0),
            ("_sec", "s", 1.0), ("_s", "s", 1.0))


@dataclass(frozen=True)
class Value:
    figure: str              # the figure's name (what `report --metrics` takes)
    label: str               # how tables head it
    unit: str                # of every number here: "B/s", "ops/s", "s", "MB/s", "GFLOPS", ""
    scope: str               # AGGREGATE | PER_SLOT | PER_JOB
    over: str                # "phases" | "records": what n counts
    n: int
    median: float
    min: float
    max: float
    p99: float | None = None
    ci_low: float | None = None      # 95% CI of the mean over phases; None: see interval_note
    ci_high: float | None = None
    interval_note: str = ""          # why there is no interval ("n too small")
    direction: str = ""              # "higher" | "lower" is better | "" (not a performance)

    def as_dict(self) -> dict:
        return asdict(self)


def _interval(s: Spread | Dist, over: str) -> tuple[float | None, float | None, str]:
    """The 95% interval of the mean over repetitions (phases); over records, none: slots of
    one phase are not independent repetitions."""
    if over != "phases":
        return None, None, "over records, not repetitions"
    if s.n < MIN_INTERVAL_N or getattr(s, "ci_low", None) is None:
        return None, None, TOO_SMALL
    return s.ci_low, s.ci_high, ""     # type: ignore[union-attr]


def _of(fig: F.Figure, scope: str, over: str, s: Spread | Dist, factor: float = 1.0,
        unit: str | None = None, label: str | None = None) -> Value:
    lo, hi, why = _interval(s, over)
    if isinstance(s, Dist):
        med, low, high, p99 = s.median, s.median if s.min is None else s.min, s.max, s.p99
    else:
        med, low, high, p99 = s.median, s.min, s.max, None
    f = factor
    return Value(fig.name, fig.title if label is None else label, fig.unit if unit is None
                 else unit, scope, over, s.n, med * f, low * f, high * f,
                 None if p99 is None else p99 * f, None if lo is None else lo * f,
                 None if hi is None else hi * f, why, fig.direction)


def _share(v: Value, among: int, scope: str = PER_SLOT) -> Value:
    """A summed figure's Value divided among `among` slots (or jobs)."""
    w = max(among, 1)
    div = lambda x: None if x is None else x / w   # noqa: E731
    return Value(v.figure, v.label, v.unit, scope, v.over, v.n, v.median / w, v.min / w,
                 v.max / w, div(v.p99), div(v.ci_low), div(v.ci_high), v.interval_note,
                 v.direction)


def jobs_of(p: PointSummary) -> int:
    """How many jobs a parallel task's point ran at once (workers / ranks); 0 for a task
    that is not parallel, or whose ranks are single (a job is then a slot)."""
    ranks = p.params.get("ranks")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 2:
        return 0
    return max(p.workers // ranks, 1)


def _shares(v: Value, p: PointSummary) -> list[Value]:
    """A summed figure's aggregate, per job where the point ran several jobs (before per
    slot, which would split one job's figure over its ranks: a narrow table keeps it
    longer), and per slot."""
    jobs = jobs_of(p)
    return [v, *([_share(v, jobs, PER_JOB)] if jobs > 1 else []), _share(v, p.workers)]


def metric_unit(kernel_name: str, name: str, units: dict[str, str] | None = None
                ) -> tuple[str, float]:
    """The unit a metric's values are given in here, and the factor from the stored value.
    units: what the records say a command's metric is stored in (PointSummary.units)."""
    stored = (units or {}).get(name)
    if stored:
        return ("s", _TIMES[stored]) if stored in _TIMES else (stored, 1.0)
    declared = kernel(kernel_name).figure(name)
    if declared is not None:
        if declared.unit in _TIMES:
            return "s", _TIMES[declared.unit]
        return declared.unit, 1.0
    low = "_" + name.lower()
    for ending, unit, factor in _ENDINGS:
        if low.endswith(ending) and len(low) > len(ending):
            return unit, factor
    return "", 1.0


def _computed(p: PointSummary) -> dict[str, list[Value]]:
    out: dict[str, list[Value]] = {}
    if p.bandwidth is not None:
        v = _of(F.BANDWIDTH, AGGREGATE, "phases", p.bandwidth)
        out[F.BANDWIDTH.name] = _shares(v, p)
    if p.ops_rate is not None and not kernel(p.kernel).sync_only:
        v = _of(F.OPS_RATE, AGGREGATE, "phases", p.ops_rate)
        out[F.OPS_RATE.name] = _shares(v, p)
    if p.stonewall_bandwidth is not None:
        v = _of(F.STONEWALL, AGGREGATE, "phases", p.stonewall_bandwidth)
        out[F.STONEWALL.name] = _shares(v, p)
    for fig, d, over in ((F.SYNC_OVERHEAD, p.sync_overhead, "phases"),
                         (F.CYCLE, p.cycle, "phases"), (F.SKEW, p.skew, "phases"),
                         (F.LATENESS, p.lateness, "records")):
        if d is not None:
            out[fig.name] = [_of(fig, AGGREGATE if fig.scope == F.PHASE else PER_SLOT, over, d,
                                 1e-9, "s")]
    if p.latency_us:
        qs = p.latency_us
        med, p99 = qs.get("p50"), qs.get("p99")
        if med is not None:
            top = qs.get("max", p99 if p99 is not None else med)
            out[F.LATENCY.name] = [Value(F.LATENCY.name, F.LATENCY.title, "s", PER_SLOT,
                                         "operations", p.ok, med * 1e-6, med * 1e-6, top * 1e-6,
                                         None if p99 is None else p99 * 1e-6,
                                         direction=F.LATENCY.direction)]
    if p.slot_elapsed is not None:
        out[F.ELAPSED.name] = [_of(F.ELAPSED, PER_SLOT, "records", p.slot_elapsed)]
    return out


def point_values(p: PointSummary, slots: dict[str, Spread] | None = None
                 ) -> dict[str, list[Value]]:
    """Every figure of the point, by name: the computed ones, then each metric's (its
    aggregate first when it is summed over the slots). `slots`: each metric's spread over the
    point's ok records (metric_spreads), for the per-slot values of metrics not summed."""
    out = _computed(p)
    k = kernel(p.kernel)
    for name in p.metrics:
        fig = k.figure(name)
        if fig is not None and fig.role in (F.HIDDEN, F.FLAG):
            continue
        fig = fig or F.Figure(name, "", direction="")
        unit, factor = metric_unit(p.kernel, name, p.units)
        if summed(p.kernel, name) and name in p.metric_sums:
            v = _of(fig, AGGREGATE, "phases", p.metric_sums[name], factor, unit)
            out[name] = _shares(v, p)
            continue
        s = (slots or {}).get(name)
        if s is None:
            x = p.metrics[name]
            s = Spread(x, x, x, 1)
        # a slot's own value, or where the kernel declares it a job's (one per job) or the
        # phase's (one per phase), that one
        scope = {F.JOB: PER_JOB, F.PHASE: AGGREGATE}.get(fig.scope, PER_SLOT)
        out[name] = [_of(fig, scope, "records", s, factor, unit)]
    return out


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
