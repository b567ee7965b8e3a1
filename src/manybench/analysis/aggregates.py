"""A phase's aggregates (results schema 9): what every reader needs of its records, made once
when the phase is stored, in its own transaction (results/store.py), so a reader holds
O(phases x nodes) summaries, never the records (docs/definitions.md, "Over records, at any
size").

A phase aggregates as the parts summarize() counts it for (analysis/points.py): the phase
itself and, for a [[concurrent]] group, each task in it. Per part: its phase figures
(phase_figures.py: exact), its counts of statuses and of the values its kernel counts, its late
starts, per figure taken over records a Sketch (sketch.py: n, sum, min, max exact; the values
while few, else buckets of a stated relative accuracy), per metric the phase's median and sum
of its ok records (the figures over repetitions), the latency histograms merged, and per node
its records, ok bytes and the cpus its slots were allowed (the hints' and the end's checks').
"""
from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..kernels import figures as F
from ..kernels import hist as H
from ..kernels.binding import cpu_bound
from ..record import Record
from ..results.contract import StoredPhase
from . import late as late_mod
from .facts import tally
from .phase_figures import PhaseFigures
from .sketch import Sketch
from .slot_figures import own_rate, slot_seconds
from .stats import median

LATENESS, SLOT_S, OWN_BYTES, OWN_OPS = "lateness", "slot_s", "own_bytes", "own_ops"
SEP = "\t"     # between a task's name and a cpu list in a node's kinds of slots


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass
class PartAgg:
    """One part of one phase (points.py's _parts), summarised over its records."""
    info: StoredPhase                      # the part as summarize() sees it
    figures: PhaseFigures
    records: int = 0
    status: dict[str, int] = field(default_factory=dict)       # status -> records
    late: late_mod.LateCount = field(default_factory=late_mod.LateCount)
    over: dict[str, Sketch] = field(default_factory=dict)      # LATENESS, SLOT_S, OWN_*
    metrics: dict[str, Sketch] = field(default_factory=dict)   # numeric metric, ok records
    present: dict[str, int] = field(default_factory=dict)      # metric -> ok records with it
    medians: dict[str, float] = field(default_factory=dict)    # numeric metric: its median
    sums: dict[str, float] = field(default_factory=dict)       # numeric metric: its sum
    hist: dict[int, int] | None = None     # the ok records' histograms merged (None: none)
    clock_error: float | None = None
    texts: dict[str, list[str]] = field(default_factory=dict)  # str metric -> distinct
    units: dict[str, list[str]] = field(default_factory=dict)
    facts: list[list] = field(default_factory=list)   # [kernel, i, fact, value, n, nodes]
    kernels: list[str] = field(default_factory=list)  # the records' kernels, first seen first
    said: int = 0                          # records saying they missed a metric (any status)
    allowed: dict[str, int] = field(default_factory=dict)      # cpus_allowed -> ok records
    cpu_bound: int = 0
    codes: dict[str, dict[int, int]] = field(default_factory=dict)
    # node -> [records, ok bytes, {task SEP cpus allowed ("": not read back): [records, ok]}]
    nodes: dict[str, list] = field(default_factory=dict)


def part_aggregate(info: StoredPhase, recs: Sequence[Record], figures: PhaseFigures
                   ) -> PartAgg:
    """A part's aggregate from its records (ordered by node and slot, as Store.records)."""
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
            kind = type(v)       # not _number: asked of every metric of 64,000 records
            if kind is int or kind is float or (kind is not bool and kind is not str
                                                and _number(v)):
                got = values.get(name)
                if got is None:
                    values[name] = [v]
                else:
                    got.append(v)
            elif kind is str:
                if isinstance(name, str) and name.endswith(F.UNIT_SUFFIX):
                    _add(a.units, name[:-len(F.UNIT_SUFFIX)], v)
                _add(a.texts, name, v)
    for name, vs in values.items():
        a.metrics[name] = Sketch.of(vs)
        a.medians[name] = median(vs)
        total = 0.0
        for v in vs:     # in record order, as points._metric_sums adds them
            total += v
        a.sums[name] = total
    hists = [r.hist for r in ok if r.hist]
    a.hist = H.merge(hists) if hists else None
    clock = [r.metrics[F.CLOCK_ERROR.name] for r in recs
             if _number(r.metrics.get(F.CLOCK_ERROR.name))]
    a.clock_error = max(clock) if clock else None
    a.kernels, a.facts = tally(recs)
    a.said = sum(bool((r.extra or {}).get("missing_metrics")) for r in recs)
    allowed = Counter(str(r.metrics[F.CPUS_ALLOWED.name]) for r in ok
                      if r.metrics.get(F.CPUS_ALLOWED.name))
    a.allowed = dict(allowed)
    a.cpu_bound = sum(cpu_bound(r.metrics) for r in ok)
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


def _kernel_counts(kernel_name: str) -> list:
    from ..kernels import kernel   # noqa: PLC0415 (kernels import analysis lazily too)
    try:
        return [f for f in kernel(kernel_name).figures if f.role == F.COUNT]
    except (KeyError, ValueError):
        return []


def _add(d: dict[str, list[str]], name: str, v: str) -> None:
    seen = d.setdefault(name, [])
    if v not in seen:
        seen.append(v)


# -- stored as JSON ------------------------------------------------------------------------------
def to_json(a: PartAgg) -> dict[str, Any]:
    fig = dataclasses.asdict(a.figures)
    fig.pop("lateness_ns")
    late = dataclasses.asdict(a.late)
    late["by_cause"] = dict(a.late.by_cause)
    info = {k: getattr(a.info, k) for k in ("task", "kernel", "workers", "point", "params",
                                           "label")}
    return {"info": info, "figures": fig, "records": a.records, "status": a.status,
            "late": late, "over": {k: s.to_json() for k, s in a.over.items()},
            "metrics": {k: s.to_json() for k, s in a.metrics.items()}, "present": a.present,
            "medians": a.medians, "sums": a.sums,
            "hist": None if a.hist is None else {str(k): c for k, c in a.hist.items()},
            "clock_error": a.clock_error, "texts": a.texts, "units": a.units,
            "facts": a.facts, "kernels": a.kernels, "said": a.said, "allowed": a.allowed,
            "cpu_bound": a.cpu_bound,
            "codes": {k: {str(c): n for c, n in v.items()} for k, v in a.codes.items()},
            "nodes": a.nodes}


def from_json(phase: StoredPhase, d: dict[str, Any], shared: dict | None = None) -> PartAgg:
    """A stored part read back; shared: what the parts of one read share (a run's phases'
    nodes mostly hold the same: 1,000 nodes x 64 slots, each phase alike), kept once."""
    info = dataclasses.replace(phase, **d["info"])
    fig = dict(d["figures"])
    blocks = F.STONEWALL_BLOCKS.name      # PhaseFigures' field of that figure: a pair
    if fig.get(blocks) is not None:
        fig[blocks] = tuple(fig[blocks])
    late = dict(d["late"])
    late["by_cause"] = Counter(late["by_cause"])
    return PartAgg(
        info, PhaseFigures(**fig), records=d["records"], status=d["status"],
        late=late_mod.LateCount(**late),
        over={k: Sketch.from_json(s) for k, s in d["over"].items()},
        metrics={k: Sketch.from_json(s) for k, s in d["metrics"].items()},
        present=d["present"], medians=d["medians"], sums=d["sums"],
        hist=None if d["hist"] is None else {int(k): c for k, c in d["hist"].items()},
        clock_error=d["clock_error"], texts=d["texts"], units=d["units"], facts=d["facts"],
        kernels=d["kernels"], said=d["said"],
        allowed=d["allowed"], cpu_bound=d["cpu_bound"],
        codes={k: {int(c): n for c, n in v.items()} for k, v in d["codes"].items()},
        nodes=_shared_nodes(d["nodes"], {} if shared is None else shared))


def _shared_nodes(nodes: dict[str, list], shared: dict) -> dict[str, list]:
    """A part's nodes with their names and their entries each held once per read (read-only
    from then on): what a reader holds grows with the phases by a dict of pointers each."""
    out = {}
    for name, (n, b, kinds) in nodes.items():
        key = (n, b, tuple((k, tuple(v)) for k, v in kinds.items()))
        entry = shared.get(key)
        if entry is None:
            entry = shared[key] = [n, b, kinds]
        out[sys.intern(name)] = entry
    return out


def phase_aggregates(info: StoredPhase, records: Sequence[Record]) -> list[PartAgg]:
    """A stored phase's aggregates: its own part, then for a [[concurrent]] group each task's
    (points._group_parts), each over its records ordered by node and slot."""
    from ..model import GROUP_KERNEL   # noqa: PLC0415
    from .points import _figures, _group_parts   # noqa: PLC0415 (points reads these back)
    # as SQLite orders them (a record with no node fails its insert after this)
    recs = sorted(records, key=lambda r: (r.node is not None, r.node or "", r.slot))
    parts = [(info, recs)] + (_group_parts(info, recs) if info.kernel == GROUP_KERNEL else [])
    return [part_aggregate(p, rs, _figures(p, rs)) for p, rs in parts]
