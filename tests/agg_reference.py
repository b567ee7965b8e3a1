"""A phase part's aggregate as int30 made it, a record at a time (analysis/aggregates.py
before it worked a column at a time): the reference the faster one must equal, JSON for JSON
(test_aggregate_cost.py)."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Sequence

from manybench.analysis import late as late_mod
from manybench.analysis.aggregates import (LATENESS, OWN_BYTES, OWN_OPS, SEP, SLOT_S, PartAgg,
                                           _kernel_counts)
from manybench.analysis.facts import tally
from manybench.analysis.phase_figures import PhaseFigures
from manybench.analysis.sketch import Sketch
from manybench.analysis.slot_figures import own_rate, slot_seconds
from manybench.analysis.stats import median
from manybench.kernels import figures as F
from manybench.kernels import hist as H
from manybench.kernels.binding import cpu_bound, cpu_shared
from manybench.record import Record
from manybench.results.contract import StoredPhase


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _add(d: dict[str, list[str]], name: str, v: str) -> None:
    seen = d.setdefault(name, [])
    if v not in seen:
        seen.append(v)


def part_aggregate(info: StoredPhase, recs: Sequence[Record], figures: PhaseFigures
                   ) -> PartAgg:
    a = PartAgg(info, dataclasses.replace(figures, lateness_ns=[]), records=len(recs))
    ok = [r for r in recs if r.status == "ok"]
    a.status = dict(Counter(r.status for r in recs))
    a.late = late_mod.count([recs])
    a.over[LATENESS] = Sketch.of(figures.lateness_ns)
    secs = [slot_seconds(r) for r in ok]
    a.over[SLOT_S] = Sketch.of(secs)
    for key, what in ((OWN_BYTES, "bytes"), (OWN_OPS, "ops")):
        if any(getattr(r, what) for r in ok):
            a.over[key] = Sketch.of([x for r, t in zip(ok, secs)
                                     if (x := own_rate(r, what, t)) is not None])
    values: dict[str, list] = {}
    present = a.present
    for r in ok:
        for name, v in r.metrics.items():
            present[name] = present.get(name, 0) + 1
            if _number(v):
                values.setdefault(name, []).append(v)
            elif isinstance(v, str):
                if name.endswith(F.UNIT_SUFFIX):
                    _add(a.units, name[:-len(F.UNIT_SUFFIX)], v)
                _add(a.texts, name, v)
    for name, vs in values.items():
        a.metrics[name] = Sketch.of(vs)
        a.medians[name] = median(vs)
        total = 0.0
        for v in vs:
            total += v
        a.sums[name] = total
    hists = [r.hist for r in ok if r.hist]
    a.hist = H.merge(hists) if hists else None
    clock = [r.metrics[F.CLOCK_ERROR.name] for r in recs
             if _number(r.metrics.get(F.CLOCK_ERROR.name))]
    a.clock_error = max(clock) if clock else None
    a.kernels, a.facts = tally(recs)
    a.said = sum(bool((r.extra or {}).get("missing_metrics")) for r in recs)
    a.allowed = dict(Counter(str(r.metrics[F.CPUS_ALLOWED.name]) for r in ok
                             if r.metrics.get(F.CPUS_ALLOWED.name)))
    a.cpu_bound = sum(cpu_bound(r.metrics) for r in ok)
    a.cpu_shared = sum(cpu_shared(r.metrics) for r in ok)
    counted = [f.name for f in _kernel_counts(info.kernel)]
    for r in recs:
        for name in counted:
            code = r.metrics.get(name)
            if _number(code):
                per = a.codes.setdefault(name, {})
                per[int(code)] = per.get(int(code), 0) + 1
    for r in recs:
        n = a.nodes.setdefault(r.node, [0, 0, {}])
        n[0] += 1
        allowed_ = r.metrics.get(F.CPUS_ALLOWED.name)
        kind = n[2].setdefault(f"{r.task}{SEP}{allowed_ if isinstance(allowed_, str) else ''}",
                               [0, 0])
        kind[0] += 1
        if r.status == "ok":
            n[1] += r.bytes
            kind[1] += 1
    return a
