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
import functools
import operator
import sys
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress
from typing import Any, Sequence

from ..extra_keys import MISSING_METRICS
from ..status import OK_TEXT
from ..kernels import figures as F
from ..kernels import hist as H
from ..kernels.binding import cpu_bound, cpu_shared
from ..record import Record
from ..results.contract import StoredPhase
from . import late as late_mod
from .facts import tally
from .phase_figures import PhaseFigures
from .sketch import Sketch
from .slot_figures import slot_seconds
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
    cpu_shared: int = 0
    codes: dict[str, dict[int, int]] = field(default_factory=dict)
    # node -> [records, ok bytes, {task SEP cpus allowed ("": not read back): [records, ok]}]
    nodes: dict[str, list] = field(default_factory=dict)


def part_aggregate(info: StoredPhase, recs: Sequence[Record], figures: PhaseFigures
                   ) -> PartAgg:
    """A part's aggregate from its records (ordered by node and slot, as Store.records).

    Made with every phase stored (64,000 records at 1,000 x 64): a column at a time, each a
    list taken from the records once, counted in C (Counter, map, zip) where it can be, so the
    phase loop pays a few passes per field, not a dozen passes of Python per record."""
    a = PartAgg(info, dataclasses.replace(figures, lateness_ns=[]), records=len(recs))
    col = _Columns(recs)
    status, metrics = col["status"], col["metrics"]
    is_ok = [s == OK_TEXT for s in status]
    every_ok = all(is_ok)

    def ok_only(values: list) -> list:
        return values if every_ok else list(compress(values, is_ok))

    ok, ok_metrics = ok_only(list(recs)), ok_only(metrics)
    a.status = dict(Counter(status))
    a.late = late_mod.count_phase(status, metrics, col["extra"], col["t0_ns"], col["start_ns"],
                                  col["node"], col["cpu"])
    a.over[LATENESS] = Sketch.of(figures.lateness_ns)
    elapsed = ok_only(col["elapsed_s"])
    secs = elapsed if not elapsed or min(elapsed) > 0 else [slot_seconds(r) for r in ok]
    a.over[SLOT_S] = Sketch.of(secs)
    for key, what in ((OWN_BYTES, "bytes"), (OWN_OPS, "ops")):
        done = ok_only(col[what])
        if any(done):
            a.over[key] = Sketch.of([x / t for x, t in zip(done, secs) if t > 0])
    shapes = set(map(tuple, metrics))       # the records' metrics' names, by record
    names = set().union(*shapes)
    values = _metric_columns(a, ok_metrics, shapes if every_ok else None)
    for name, vs in values.items():
        a.metrics[name] = Sketch.of(vs)
        a.medians[name] = median(vs)
        # in record order, as points._metric_sums adds them (one float add after another)
        a.sums[name] = functools.reduce(operator.add, vs, 0.0)
    hists = [h for h, k in zip(col["hist"], is_ok) if k and h]
    a.hist = H.merge(hists) if hists else None
    clock = _numbers(metrics, F.CLOCK_ERROR.name)[1] if F.CLOCK_ERROR.name in names else []
    a.clock_error = max(clock) if clock else None
    a.kernels, a.facts = tally(recs)
    a.said = sum(1 for x in col["extra"] if x and x.get(MISSING_METRICS))
    allowed_ = [m.get(F.CPUS_ALLOWED.name) for m in metrics] \
        if F.CPUS_ALLOWED.name in names else [None] * len(recs)
    a.allowed = dict(Counter(map(str, filter(None, ok_only(allowed_)))))
    a.cpu_bound = sum(map(cpu_bound, ok_metrics)) if F.CPUS_USED.name in names else 0
    a.cpu_shared = sum(map(cpu_shared, ok_metrics)) if F.CPUS_BUSY.name in names else 0
    counted = [(*_numbers(metrics, f.name), f.name) for f in _kernel_counts(info.kernel)
               if f.name in names]
    # each counted metric in the order a record first gave it, then its codes in theirs
    for _, codes, name in sorted(counted, key=lambda c: c[0]):
        if codes:
            a.codes[name] = dict(Counter(map(int, codes)))
    _node_counts(a, col["node"], col["task"], allowed_, is_ok, col["bytes"])
    return a


class _Columns(dict):
    """A part's records a field at a time: each field's values taken once, on first use."""

    def __init__(self, recs: Sequence[Record]) -> None:
        super().__init__()
        self.recs = recs

    def __missing__(self, name: str) -> list:
        got = self[name] = list(map(operator.attrgetter(name), self.recs))
        return got


def _metric_columns(a: PartAgg, ok_metrics: list[dict], shapes: set | None = None
                    ) -> dict[str, list]:
    """Per numeric metric its ok records' values in record order; a.present, a.texts and
    a.units filled, as the per-record rule (_metric_values) does, in its order: a metric at a
    time when every ok record names the same metrics, each of one kind throughout. shapes:
    the records' tuples of names, when known."""
    if shapes is None:
        shapes = set(map(tuple, ok_metrics))
    if len(shapes) != 1:
        return _metric_values(a, ok_metrics)
    (names,) = shapes
    values: dict[str, list] = {}
    texts: dict[str, list] = {}
    for name in names:
        vs = list(map(operator.itemgetter(name), ok_metrics))
        kinds = set(map(type, vs))
        if kinds <= _NUMBERS:
            values[name] = vs
        elif kinds == {str}:
            texts[name] = vs
        elif not kinds <= _IGNORED:     # of mixed kinds: first seen decides an order
            return _metric_values(a, ok_metrics)
    for name in names:
        a.present[name] = len(ok_metrics)
        vs = texts.get(name)
        if vs is not None:
            seen = list(dict.fromkeys(vs))
            if isinstance(name, str) and name.endswith(F.UNIT_SUFFIX):
                a.units[name[:-len(F.UNIT_SUFFIX)]] = seen
            a.texts[name] = list(seen)
    return values


_NUMBERS = {int, float}
_IGNORED = {bool, type(None)}     # neither a number nor a text (_metric_values skips them)


def _metric_values(a: PartAgg, ok_metrics: list[dict]) -> dict[str, list]:
    """_metric_columns a record at a time (records naming different metrics)."""
    values: dict[str, list] = {}
    present = a.present
    for metrics in ok_metrics:
        for name, v in metrics.items():
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
    return values


def _numbers(metrics: list[dict], name: str) -> tuple[int, list]:
    """The records' numeric values of one metric in record order, and the place of the first
    record with one (len(metrics) when none has)."""
    vs = list(map(operator.methodcaller("get", name), metrics))
    if set(map(type, vs)) <= _NUMBERS:
        return 0, vs
    at = [(i, v) for i, v in enumerate(vs) if v is not None and _number(v)]
    return (at[0][0] if at else len(metrics)), [v for _, v in at]


def _node_counts(a: PartAgg, node: list, task: list, allowed: list, is_ok: list[bool],
                 nbytes: list) -> None:
    """a.nodes: per node (first seen first) its records, its ok records' bytes and per kind
    of slot (task SEP cpus allowed) [records, ok], kinds first seen first."""
    if any(issubclass(k, str) for k in set(map(type, allowed))):
        kinds = [f"{t}{SEP}{c if isinstance(c, str) else ''}" for t, c in zip(task, allowed)]
    else:       # no slot read its cpus back (a simulated node's): a kind per task
        kinds = list(map({t: f"{t}{SEP}" for t in set(task)}.__getitem__, task))
    every = Counter(zip(node, kinds))
    ok = every if all(is_ok) else Counter(compress(zip(node, kinds), is_ok))
    for (n, kind), c in every.items():
        entry = a.nodes.get(n)
        if entry is None:
            entry = a.nodes[n] = [0, 0, {}]
        entry[0] += c
        entry[2][kind] = [c, ok.get((n, kind), 0)]
    if any(nbytes):
        for n, b, k in zip(node, nbytes, is_ok):
            if k:
                a.nodes[n][1] += b


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
            "cpu_bound": a.cpu_bound, "cpu_shared": a.cpu_shared,
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
        cpu_shared=d.get("cpu_shared", 0),    # stored before records said how busy: none
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


def _ordered(records: Sequence[Record]) -> list[Record]:
    """The records by (node, slot), those with no node first: the order of a sort on keys
    made in C (zip of two columns), not a key function called per record."""
    nodes = list(map(operator.attrgetter("node"), records))
    if None in nodes:
        return sorted(records, key=lambda r: (r.node is not None, r.node or "", r.slot))
    keys = list(zip(nodes, map(operator.attrgetter("slot"), records)))
    return [records[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]


def phase_aggregates(info: StoredPhase, records: Sequence[Record]) -> list[PartAgg]:
    """A stored phase's aggregates: its own part, then for a [[concurrent]] group each task's
    (points._group_parts), each over its records ordered by node and slot."""
    from ..model import GROUP_KERNEL   # noqa: PLC0415
    from .points import _figures, _group_parts   # noqa: PLC0415 (points reads these back)
    # as SQLite orders them (a record with no node fails its insert after this)
    recs = _ordered(records)
    parts = [(info, recs)] + (_group_parts(info, recs) if info.kernel == GROUP_KERNEL else [])
    return [part_aggregate(p, rs, _figures(p, rs)) for p, rs in parts]
