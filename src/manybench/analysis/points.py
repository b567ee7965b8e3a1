"""Per-point summaries: a point's phases (phase_figures.py) and records summarized.

Per point, over its phases and records: counts by status, medians, spreads and nearest-rank
percentiles (see stats.py). Records whose status is not ok are counted but excluded from every
timing figure, since their stamps are partial or absent.
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..status import OK_TEXT, Status
from ..kernels import figures as F
from ..kernels import hist as H
from ..kernels import kernel
from ..kernels.binding import cpu_bound, cpu_shared
from ..model import GROUP_KERNEL
from ..node.wire_types import TelemetryRow
from ..record import Record
from ..results.contract import StoredPhase
from . import late as late_mod
from .facts import FactValue, point_facts
from .phase_figures import PhaseFigures, phase_figures
from .slot_figures import own_rates, slot_seconds, texts
from .rates import summed
from .stats import Dist, Spread, Stats, median
from .telemetry import TelemetrySummary
from .telemetry import by_phase as telemetry_by_phase

LATENCY_QUANTILES = (50.0, 90.0, 99.0, 99.9)


@dataclass
class PointSummary:
    """One point (task, variant, params, workers) summarized over its phases."""
    point: str
    task: str
    kernel: str
    variant: str
    workers: int
    params: dict[str, Any]
    phases: int = 0
    records: int = 0
    ok: int = 0
    error: int = 0
    timeout: int = 0
    lost: int = 0
    ops: float | None = None                  # per phase, median
    bytes: float | None = None                # per phase, median
    bandwidth: Stats | None = None            # aggregate bandwidth over phases, bytes/s
    ops_rate: Stats | None = None             # aggregate ops/s over phases
    stonewall_bandwidth: Spread | None = None
    stonewall_measured: bool = False          # the slots' own figures (wear_out), not estimated
    stonewall_blocks: tuple[int, int] | None = None   # min, max blocks by the stonewall
    slot_elapsed: Spread | None = None        # per-slot seconds over records
    own_bandwidth: Spread | None = None       # each slot's bytes / its elapsed, over records
    own_ops_rate: Spread | None = None        # each slot's ops / its elapsed, over records
    lateness: Dist | None = None              # ns over records
    skew: Dist | None = None                  # ns over phases
    sync_overhead: Dist | None = None         # ns over phases, null kernel only
    cycle: Dist | None = None                 # ns over phases: last end - go sent
    latency_us: dict[str, float] = field(default_factory=dict)   # "p50" -> microseconds
    latency_source: str = ""                  # "hist" (merged) or "metrics" (median of slots)
    clock_error_ns: float | None = None       # max clock-offset bound of the records
    metrics: dict[str, float] = field(default_factory=dict)      # extracted figures, median
    # per COUNT figure of the kernel (a command's exit_status): value -> records, failed too
    counts: dict[str, dict[int, int]] = field(default_factory=dict)
    failed: list[Record] = field(default_factory=list)           # records with status != ok
    cpu_util: float | None = None             # median over ok records: cpu time / wall time
    cpus_allowed: str = ""                    # the most common readback (kernels/binding.py)
    cpu_bound: int = 0                        # ok records that kept about all their cpus busy
    cpu_shared: int = 0                       # ok records whose cpus others kept busy (binding.py)
    cpus_others: float | None = None          # median busy share - median own share of its cpus
    wrap_startup_s: float | None = None       # median start-up of the wrap (outside the window)
    phase_figures: list[PhaseFigures] = field(default_factory=list)
    late: late_mod.LateCount = field(default_factory=late_mod.LateCount)   # late starts
    # issue 10: each extracted metric over repetitions (per phase: the median of its ok
    # records), warm-up phases left out, and the nodes' telemetry during the point's phases
    metric_stats: dict[str, Stats] = field(default_factory=dict)
    # the metrics summed over a phase's slots (efficiency.summed): per phase the sum of its
    # ok records, over repetitions; the aggregate the report shows beside the per-slot value
    metric_sums: dict[str, Stats] = field(default_factory=dict)
    warmup: int = 0                           # warm-up phases run for the point, not analysed
    # a command's metric captured with its unit (kernels/command.py): the unit its values are
    # stored in, when every ok record agrees (mixed: a `units` warning, run/quality.py)
    units: dict[str, str] = field(default_factory=dict)
    telemetry: TelemetrySummary | None = None  # during the point's phases
    facts: tuple[FactValue, ...] = ()          # what decides its figures (analysis/facts.py)
    # TEXT metrics (kernels/figures.py: a tool's version): the texts its ok records carry
    texts: dict[str, str] = field(default_factory=dict)


def _units(ok: list[Record]) -> dict[str, str]:
    """Per metric, the unit its records say it is stored in, when they all say the same."""
    seen: dict[str, set[str]] = {}
    for r in ok:
        for key, v in r.metrics.items():
            if key.endswith(F.UNIT_SUFFIX) and isinstance(v, str):
                seen.setdefault(key[:-len(F.UNIT_SUFFIX)], set()).add(v)
    return {name: next(iter(us)) for name, us in seen.items() if len(us) == 1}


def _cpu_use(s: PointSummary, ok: list[Record]) -> None:
    """How much cpu the work used of what it was allowed (kernels/binding.py)."""
    s.cpu_util = _median_of(ok, F.CPU_UTIL.name)
    allowed = Counter(str(r.metrics[F.CPUS_ALLOWED.name]) for r in ok
                      if r.metrics.get(F.CPUS_ALLOWED.name))
    s.cpus_allowed = allowed.most_common(1)[0][0] if allowed else ""
    s.cpu_bound = sum(cpu_bound(r.metrics) for r in ok)
    s.cpu_shared = sum(cpu_shared(r.metrics) for r in ok)
    s.cpus_others = others_median(_median_of(ok, F.CPUS_BUSY.name),
                                  _median_of(ok, F.CPUS_USED.name))
    s.wrap_startup_s = _median_of(ok, F.WRAP_STARTUP.name)


def others_median(busy: float | None, own: float | None) -> float | None:
    """What others took of a point's cpus: its median busy share less its median own."""
    return None if busy is None or own is None else round(max(0.0, busy - own), 4)


def _median_of(records: list[Record], name: str) -> float | None:
    vals = [r.metrics[name] for r in records if _number(r.metrics.get(name))]
    return median(vals) if vals else None


def extracted(r: Record, name: str) -> bool:
    """Whether a metric of the record is a figure of its own: not a latency percentile (those
    are merged apart), nor what every slot adds or a kernel counts (context, counts)."""
    return _extracted(r.kernel, name)


@functools.lru_cache(maxsize=8192)
def _extracted(kernel_name: str, name: str) -> bool:
    # asked for every metric of every record (millions at 1,000 nodes x 64 slots): the
    # answer depends on the kernel and the name only
    if F.latency_metric(name):
        return False
    f = kernel(kernel_name).figure(name)
    return f is None or f.role not in (F.CONTEXT, F.COUNT)


def _fallback_point(r: Record) -> str:
    # records of a phase the phases table does not know (or no phases given at all)
    return json.dumps([r.task, r.variant, r.workers, r.params], sort_keys=True, default=str)


def _latency(ok: list[Record]) -> tuple[dict[str, float], str]:
    """Merged latency percentiles (us) from the records' histograms; else medians of metrics."""
    hists = [r.hist for r in ok if r.hist]
    if hists:
        merged = H.merge(hists)
        if merged:    # only empty histograms: fall back to metrics
            out = {_qname(q): H.percentile(merged, q) / 1e3 for q in LATENCY_QUANTILES}
            out["max"] = H.percentile(merged, 100.0) / 1e3
            return out, "hist"
    by_q: dict[str, list[float]] = {}
    for r in ok:
        for name, v in r.metrics.items():
            q = F.latency_metric(name)
            if q and _number(v):
                by_q.setdefault(q, []).append(v)
    out = {q: median(vs) for q, vs in sorted(by_q.items(), key=lambda kv: _qorder(kv[0]))}
    return out, "metrics" if out else ""


def _qorder(name: str) -> float:
    return {"min": -1.0, "mean": 49.99, "max": 1e9}.get(name) or float(name[1:])


def _qname(q: float) -> str:
    return f"p{q:g}"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def summarize(records: Iterable[Record], phases: Iterable[StoredPhase] = (),
              telemetry: Iterable[TelemetryRow] = ()) -> list[PointSummary]:
    """Summaries per point in plan order (the order of each point's first phase).

    `phases` (Store.phases()) give each phase's point key, parsed params and t0. Records of
    phases not listed are grouped by (task, variant, workers, params) instead. Warm-up
    phases (plan `warmup`: marked, rep < 0) are counted in `warmup` and left out of the rest.
    `telemetry` (Store.telemetry()): each point gets a summary of the rows of its phases.
    """
    infos: dict[int, StoredPhase] = {p.index: p for p in phases}
    by_phase: dict[int, list[Record]] = {}
    for r in records:
        by_phase.setdefault(r.phase, []).append(r)

    points: dict[str, PointSummary] = {}
    members: dict[str, list[tuple[StoredPhase, list[Record]]]] = {}
    warm: Counter = Counter()
    for idx in sorted(set(infos) | set(by_phase)):
        recs = by_phase.get(idx, [])
        for part, precs in _parts(infos.get(idx), idx, recs, warm):
            if part.point not in points:
                points[part.point], members[part.point] = _point_of(part), []
            members[part.point].append((part, precs))

    rows = telemetry_by_phase(telemetry)
    for key, s in points.items():
        _fill(s, members[key])
        s.warmup = warm[key]
        s.telemetry = TelemetrySummary.of([t for info, _ in members[key]
                                           for t in rows.get(info.index, [])])
    return list(points.values())


def _parts(info: StoredPhase | None, idx: int, recs: list[Record], warm: Counter
           ) -> list[tuple[StoredPhase, list[Record]]]:
    """A phase as the points it counts for: itself, and for a [[concurrent]] group each task
    in it too; none for a warm-up phase (counted in `warm`). info None: a phase the phases
    table does not know, described by its first record."""
    if info is None:
        r0 = recs[0]
        info = StoredPhase(run=r0.run, index=idx, task=r0.task, kernel=r0.kernel,
                           variant=r0.variant, rep=r0.rep, workers=r0.workers,
                           point=_fallback_point(r0), params=r0.params, t0_ns=None)
    if info.warmup or info.rep < 0:
        warm[info.point] += 1
        return []
    parts = [(info, recs)]
    if info.kernel == GROUP_KERNEL:   # the whole phase, then each task in it
        parts += _group_parts(info, recs)
    return parts


def _point_of(part: StoredPhase) -> PointSummary:
    return PointSummary(point=part.point, task=part.task, kernel=part.kernel,
                        variant=part.variant or "", workers=part.workers,
                        params=dict(part.params or {}))


def _figures(info: StoredPhase, recs: list[Record]) -> PhaseFigures:
    return phase_figures(info.index, recs, info.kernel, info.params, info.t0_ns, info.go_ns)


def _group_parts(info: StoredPhase, recs: list[Record]) -> list[tuple[StoredPhase, list[Record]]]:
    """A [[concurrent]] group phase's records split by task: each task's own figures, keyed
    as the group's point plus the task."""
    by_task: dict[str, list[Record]] = {}
    for r in recs:
        by_task.setdefault(r.task, []).append(r)
    return [(StoredPhase(run=info.run, index=info.index, task=task, kernel=rs[0].kernel,
                         variant=info.variant, rep=info.rep, workers=rs[0].workers,
                         point=f"{info.point}#{task}", params=rs[0].params, t0_ns=info.t0_ns,
                         status=info.status, label=f"{task} in {info.task}",
                         go_ns=info.go_ns), rs)
            for task, rs in by_task.items()]


def _metric_sums(phases: list[tuple[StoredPhase, list[Record]]]) -> dict[str, Stats]:
    """Each summed metric over repetitions: per phase the sum over its ok records."""
    per: dict[str, list[float]] = {}
    for _, recs in phases:
        mine: dict[str, float] = {}
        for r in recs:
            if r.status != OK_TEXT:
                continue
            for name, v in r.metrics.items():
                if _number(v) and extracted(r, name) and summed(r.kernel, name):
                    mine[name] = mine.get(name, 0.0) + v
        for name, v in mine.items():
            per.setdefault(name, []).append(v)
    return {name: st for name, vs in per.items() if (st := Stats.of(vs)) is not None}


def _metric_stats(phases: list[tuple[StoredPhase, list[Record]]]) -> dict[str, Stats]:
    """Each extracted metric over repetitions: per phase the median of its ok records."""
    per: dict[str, list[float]] = {}
    for _, recs in phases:
        mine: dict[str, list[float]] = {}
        for r in recs:
            if r.status != OK_TEXT:
                continue
            for name, v in r.metrics.items():
                if _number(v) and extracted(r, name):
                    mine.setdefault(name, []).append(v)
        for name, vs in mine.items():
            per.setdefault(name, []).append(median(vs))
    return {name: st for name, vs in per.items() if (st := Stats.of(vs)) is not None}


def fill_phases(s: PointSummary, figs: list[PhaseFigures]) -> None:
    """A point's figures over its phases, from each phase's figures alone."""
    s.phases = len(figs)
    s.phase_figures = figs
    timed = [f for f in figs if f.ok]   # phases with at least one ok record
    if timed:
        s.ops = median([f.ops for f in timed])
        s.bytes = median([f.bytes for f in timed])
    if any(f.bytes for f in timed):
        s.bandwidth = Stats.of([f.bandwidth for f in timed if f.bandwidth is not None])
    if any(f.ops for f in timed):
        s.ops_rate = Stats.of([f.ops_rate for f in timed if f.ops_rate is not None])
    s.stonewall_bandwidth = Spread.of([f.stonewall_bandwidth for f in timed
                                       if f.stonewall_bandwidth is not None])
    s.stonewall_measured = any(f.stonewall_measured for f in timed)
    spreads = [f.stonewall_blocks for f in timed if f.stonewall_blocks]
    if spreads:
        s.stonewall_blocks = (min(a for a, _ in spreads), max(b for _, b in spreads))
    s.skew = Dist.of([f.skew_ns for f in timed])
    if kernel(s.kernel).sync_only:
        s.sync_overhead = Dist.of([f.sync_overhead_ns for f in timed])
    s.cycle = Dist.of([f.cycle_ns for f in timed if f.cycle_ns is not None])


def _fill(s: PointSummary, phases: list[tuple[StoredPhase, list[Record]]]) -> None:
    all_recs = [r for _, recs in phases for r in recs]
    ok = [r for r in all_recs if r.status == OK_TEXT]
    s.phases, s.records = len(phases), len(all_recs)
    status = Counter(r.status for r in all_recs)
    s.ok, s.error, s.timeout, s.lost = (status[k] for k in Status)
    s.failed = [r for r in all_recs if r.status != OK_TEXT]

    fill_phases(s, [_figures(info, recs) for info, recs in phases])
    s.late = late_mod.count(recs for _, recs in phases)
    s.lateness = Dist.of([x for f in s.phase_figures if f.ok for x in f.lateness_ns])
    secs = [slot_seconds(r) for r in ok]
    s.slot_elapsed = Spread.of(secs)
    if not kernel(s.kernel).sync_only:
        s.own_bandwidth, s.own_ops_rate = (own_rates(ok, secs, w) for w in ("bytes", "ops"))
    s.latency_us, s.latency_source = _latency(ok)

    clock = [r.metrics[F.CLOCK_ERROR.name] for r in all_recs
             if _number(r.metrics.get(F.CLOCK_ERROR.name))]
    s.clock_error_ns = max(clock) if clock else None
    values: dict[str, list[float]] = {}
    for r in ok:
        for name, v in r.metrics.items():
            if _number(v) and extracted(r, name):
                values.setdefault(name, []).append(v)
    s.metrics = {name: median(vs) for name, vs in values.items()}
    s.texts = texts(s.kernel, ok)
    s.units = _units(ok)
    s.facts = point_facts(all_recs)
    s.metric_stats = _metric_stats(phases)
    s.metric_sums = _metric_sums(phases)
    _cpu_use(s, ok)
    if s.kernel == GROUP_KERNEL:   # the whole of several tasks: only totals mean something
        s.latency_us, s.latency_source, s.metrics, s.metric_stats = {}, "", {}, {}
        s.metric_sums = {}
    counted = [f.name for f in kernel(s.kernel).figures if f.role == F.COUNT]
    for r in all_recs:   # a command's exit status matters most on the records that failed
        for name in counted:
            code = r.metrics.get(name)
            if _number(code):
                per = s.counts.setdefault(name, {})
                per[int(code)] = per.get(int(code), 0) + 1


def point_of(key: str) -> Any:
    """A point's stored key (plan/expand.point_key: JSON text) as the object it encodes. A
    task's own part of a [[concurrent]] group's phase (_group_parts above: the group's key, "#",
    the task) is {"group": the group's point, "task": the task}."""
    try:
        return json.loads(key)
    except ValueError:
        pass
    group, sep, task = key.rpartition("#")
    try:
        return {"group": json.loads(group), "task": task} if sep else key
    except ValueError:
        return key
