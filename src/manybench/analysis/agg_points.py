"""Per-point summaries from the phases' stored aggregates (aggregates.py): what summarize()
and metric_spreads() make of every record, made of O(phases x nodes) summaries instead.
Equal to them for every run whose points hold at most sketch.EXACT_MAX values of a figure,
within sketch.RELATIVE beyond (tests/results/test_aggregates.py)."""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from ..status import Status
from ..kernels import figures as F
from ..kernels import hist as H
from ..kernels import kernel
from ..model import GROUP_KERNEL
from ..node.wire_types import TelemetryRow
from ..record import Record
from ..results.contract import StoredPhase
from . import late as late_mod
from .aggregates import LATENESS, OWN_BYTES, OWN_OPS, SLOT_S, PartAgg
from .facts import merged as merged_facts
from .points import (LATENCY_QUANTILES, PointSummary, _extracted, _point_of, _qname, _qorder,
                     fill_phases, others_median)
from .rates import summed
from .sketch import Sketch, merged
from .slot_figures import _fact
from .stats import Spread, Stats
from .telemetry import TelemetrySummary
from .telemetry import by_phase as telemetry_by_phase


def points_of(phases: Iterable[StoredPhase], aggs: Mapping[int, Sequence[PartAgg]],
              failed: Iterable[Record] = (), telemetry: Iterable[TelemetryRow] = ()
              ) -> list[PointSummary]:
    """summarize()'s summaries per point in plan order, from the aggregates (Store.aggregates)
    of the phases (Store.phases); failed: the run's records not ok (Store.failed_records),
    listed by the views."""
    fails: dict[int, list[Record]] = {}
    for r in failed:
        fails.setdefault(r.phase, []).append(r)
    points: dict[str, PointSummary] = {}
    members: dict[str, list[tuple[PartAgg, list[Record]]]] = {}
    warm: Counter = Counter()
    for info in sorted(phases, key=lambda p: p.index):
        if info.warmup or info.rep < 0:
            warm[info.point] += 1
            continue
        for i, a in enumerate(aggs.get(info.index, ())):
            mine = fails.get(info.index, [])
            if i:     # a task's own part of a group phase: its records only
                mine = [r for r in mine if r.task == a.info.task]
            if a.info.point not in points:
                points[a.info.point], members[a.info.point] = _point_of(a.info), []
            members[a.info.point].append((a, mine))
    rows = telemetry_by_phase(telemetry)
    for key, s in points.items():
        _fill(s, members[key])
        s.warmup = warm[key]
        s.telemetry = TelemetrySummary.of([t for a, _ in members[key]
                                           for t in rows.get(a.info.index, [])])
    return list(points.values())


def spreads_of(phases: Iterable[StoredPhase], aggs: Mapping[int, Sequence[PartAgg]]
               ) -> dict[str, dict[str, Spread]]:
    """metric_spreads(): per point key, each numeric metric's min / median / max over the ok
    records of the point's phases (warm-up phases too, as there)."""
    out: dict[str, dict[str, Sketch]] = {}
    for info in phases:
        parts = aggs.get(info.index)
        if not parts or not parts[0].status.get(Status.OK):
            continue
        per = out.setdefault(info.point, {})
        for name, sk in parts[0].metrics.items():
            per.setdefault(name, Sketch()).merge(sk)
    return {p: {n: sp for n, sk in m.items() if (sp := sk.spread()) is not None}
            for p, m in out.items()}


def _over(parts: Sequence[PartAgg], key: str) -> Sketch | None:
    got = [a.over[key] for a in parts if key in a.over]
    return merged(got) if got else None


def _fill(s: PointSummary, members: list[tuple[PartAgg, list[Record]]]) -> None:
    parts = [a for a, _ in members]
    s.phases = len(parts)
    s.records = sum(a.records for a in parts)
    status: Counter = Counter()
    for a in parts:
        status.update(a.status)
    s.ok, s.error, s.timeout, s.lost = (status[k] for k in Status)
    s.failed = [r for _, rs in members for r in rs]
    fill_phases(s, [a.figures for a in parts])
    s.late = _late(parts)
    s.lateness = merged(a.over[LATENESS] for a in parts if a.figures.ok).dist()
    slot = _over(parts, SLOT_S)
    s.slot_elapsed = slot.spread() if slot else None
    if not kernel(s.kernel).sync_only:
        s.own_bandwidth, s.own_ops_rate = (
            sk.spread() if (sk := _over(parts, k)) else None for k in (OWN_BYTES, OWN_OPS))
    s.latency_us, s.latency_source = _latency(parts)
    clock = [a.clock_error for a in parts if a.clock_error is not None]
    s.clock_error_ns = max(clock) if clock else None
    values = _metrics(parts)
    s.metrics = {name: sk.median() for name, sk in values.items()
                 if _extracted(s.kernel, name)}
    s.texts = _texts(s.kernel, parts)
    s.units = _units(parts)
    s.facts = merged_facts((a.kernels, a.facts) for a in parts)
    s.metric_stats = _per_phase(parts, "medians", s.kernel, lambda k, n: True)
    s.metric_sums = _per_phase(parts, "sums", s.kernel, summed)
    util, wrap = values.get(F.CPU_UTIL.name), values.get(F.WRAP_STARTUP.name)
    s.cpu_util = util.median() if util else None
    s.wrap_startup_s = wrap.median() if wrap else None
    allowed: Counter = Counter()
    for a in parts:
        allowed.update(a.allowed)
    s.cpus_allowed = allowed.most_common(1)[0][0] if allowed else ""
    s.cpu_bound = sum(a.cpu_bound for a in parts)
    s.cpu_shared = sum(a.cpu_shared for a in parts)
    busy, own = values.get(F.CPUS_BUSY.name), values.get(F.CPUS_USED.name)
    s.cpus_others = others_median(busy.median() if busy else None,
                                  own.median() if own else None)
    if s.kernel == GROUP_KERNEL:   # the whole of several tasks: only totals mean something
        s.latency_us, s.latency_source, s.metrics, s.metric_stats = {}, "", {}, {}
        s.metric_sums = {}
    for a in parts:
        for name, per in a.codes.items():
            mine = s.counts.setdefault(name, {})
            for code, n in per.items():
                mine[code] = mine.get(code, 0) + n


def _metrics(parts: Sequence[PartAgg]) -> dict[str, Sketch]:
    out: dict[str, Sketch] = {}
    for a in parts:
        for name, sk in a.metrics.items():
            out.setdefault(name, Sketch()).merge(sk)
    return out


def _late(parts: Sequence[PartAgg]) -> late_mod.LateCount:
    c = late_mod.LateCount()
    for a in parts:
        x = a.late
        c.phases += x.phases
        c.late_phases += x.late_phases
        c.late_slots += x.late_slots
        c.lead_phases += x.lead_phases
        c.worst_ns = max(c.worst_ns, x.worst_ns)
        c.by_cause.update(x.by_cause)
    return c


def _latency(parts: Sequence[PartAgg]) -> tuple[dict[str, float], str]:
    """points._latency from the phases' merged histograms, else their latency metrics."""
    hists = [a.hist for a in parts if a.hist is not None]
    if hists:
        whole = H.merge(hists)
        if whole:
            out = {_qname(q): H.percentile(whole, q) / 1e3 for q in LATENCY_QUANTILES}
            out["max"] = H.percentile(whole, 100.0) / 1e3
            return out, "hist"
    by_q: dict[str, Sketch] = {}
    for a in parts:
        for name, sk in a.metrics.items():
            q = F.latency_metric(name)
            if q:
                by_q.setdefault(q, Sketch()).merge(sk)
    out = {q: sk.median() for q, sk in sorted(by_q.items(), key=lambda kv: _qorder(kv[0]))}
    return out, "metrics" if out else ""   # type: ignore[return-value]


def _texts(kernel_name: str, parts: Sequence[PartAgg]) -> dict[str, str]:
    if not kernel(kernel_name).from_command:
        return {}
    seen: dict[str, dict[str, None]] = {}
    for a in parts:
        for name, vs in a.texts.items():
            if _fact(kernel_name, name):
                seen.setdefault(name, {}).update(dict.fromkeys(vs))
    return {name: ", ".join(vs) for name, vs in seen.items()}


def _units(parts: Sequence[PartAgg]) -> dict[str, str]:
    seen: dict[str, dict[str, None]] = {}
    for a in parts:
        for name, us in a.units.items():
            seen.setdefault(name, {}).update(dict.fromkeys(us))
    return {name: next(iter(us)) for name, us in seen.items() if len(us) == 1}


def _per_phase(parts: Sequence[PartAgg], what: str, kernel_name: str, keep) -> dict[str, Stats]:
    """Each extracted metric over repetitions: per phase its median ("medians") or its sum
    ("sums", metrics summed over the slots)."""
    per: dict[str, list[float]] = {}
    for a in parts:
        for name, v in getattr(a, what).items():
            if _extracted(kernel_name, name) and keep(kernel_name, name):
                per.setdefault(name, []).append(v)
    return {name: st for name, vs in per.items() if (st := Stats.of(vs)) is not None}
