"""What one phase leaves behind, as one frozen value the phase loop (run/coordinator.py) passes
on: its records and progress samples made from the slots' results, its T0, when its go was
sent, the telemetry taken with it and the warnings it raised. Committing a phase is storing
its outcome; nothing about a phase travels beside it."""
from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from ..extra_keys import ARMED_NS, RANK, SERIES
from ..status import OK_TEXT, Status
from ..results.contract import PhaseStatus, WarningKind
from ..engines.base import Node, Results, Work
from ..gc_pause import gc_paused
from ..kernels import kernel
from ..kernels import figures as F
from ..model import Phase
from ..node.arrays import SlotResults
from ..node.wire_types import Result, TelemetryRow
from ..record_columns import RecordColumns
from ..record_table import ARRAYS, RECORD, fields_of
from ..results.contract import PhaseTimes, Sample
from .samples import samples_at

try:     # plan checks and dry runs work without the C extension (kernels/native.py)
    from .. import _native
    if not hasattr(_native, "slot_extra"):     # built before records.c had them
        _native = None
except ImportError:
    _native = None

ARMED_LATE, LEAD = F.ARMED_LATE.name, F.LEAD.name
OFFSET, ERROR = F.CLOCK_OFFSET.name, F.CLOCK_ERROR.name

# a record's fields that come from its phase (record_table.py): each an attribute of the
# Phase (a method: what it returns)
_FROM_PHASE = tuple(attrgetter(f.source_field) for f in fields_of(RECORD)
                    if f.source == "phase")
# and those that come from its slot's result: each from the arrays' field it is made from;
# metrics and extra the coordinator completes (_slot_metrics, _slot_extra), the others as
# the arrays hold them
_SPARSE = {f.name for f in fields_of(ARRAYS) if f.sparse}
_FROM_SLOT = [f for f in fields_of(RECORD)
              if f.source == "slot" and f.name not in ("metrics", "extra")]
# (its name, the arrays' field, its divisor or 0) of each made from a list
_DENSE = tuple((f.name, f.source_field, f.per) for f in _FROM_SLOT
               if f.source_field not in _SPARSE)
# (its name, the arrays' field, its empty value, its factory) of each made from a map
_SPARSE_OF = tuple((f.name, f.source_field, f.default, f.factory) for f in _FROM_SLOT
                   if f.source_field in _SPARSE)


@dataclass(frozen=True)
class PhaseWarning:
    """A warning a phase raised (run/warnings.py stores and tells it)."""
    kind: WarningKind
    message: str
    node: str = ""
    task: str = ""
    phase: int | None = None
    key: tuple | None = None     # what makes it the same warning (default: all of the above)


@dataclass(frozen=True)
class PhaseOutcome:
    """One phase as the loop got it: what its transaction stores, what is told of it."""
    phase: Phase
    t0: int                       # its T0 (a phase not run: when that was decided)
    records: RecordColumns        # reads as its Records (record_columns.py)
    samples: tuple[Sample, ...] = ()
    go_ns: int | None = None      # when its go was sent (the phase cycle); None: not run
    status: str = PhaseStatus.OK  # the stored phase's
    telemetry: tuple[TelemetryRow, ...] = ()
    said: tuple[PhaseWarning, ...] = ()
    times: PhaseTimes = PhaseTimes()   # where its time went (run/times.py); none: not run

    @property
    def failed(self) -> int:
        """Its records whose status is not ok."""
        status = self.records.column("status")
        return len(status) - status.count(OK_TEXT)


@dataclass(frozen=True)
class InFlight:
    """A phase whose go was sent and whose results are not taken yet: what an interrupt
    must still keep of it."""
    phase: Phase
    nodes: tuple[Node, ...]
    work: Work
    t0: int
    go_ns: int


def _phase_values(phase: Phase) -> tuple:
    """A phase's values of its records (record_columns.PHASE_COLUMNS), in their order."""
    got = [get(phase) for get in _FROM_PHASE]
    return tuple(v() if callable(v) else v for v in got)


def _node_records(cols: RecordColumns, phase: Phase, values_by_phase: dict[int, tuple],
                  node: Node, assigned: list[tuple[int, int, int]], arr: SlotResults,
                  lead_ns: int | None, lacking: SlotResults) -> None:
    """One node's records of a phase into the columns, from its arrays: (slot, cpu, rank)
    each; a slot the arrays lack gets `lacking`'s one entry. Made a column at a time, the
    phase's and the node's values taken once (a phase of 64,000 slots makes 64,000 records).
    values_by_phase: the phase's (and its group members') PHASE_COLUMNS values by id of the
    phase, one tuple for every node (the store writes a value every record shares once:
    record_columns)."""
    t0 = cols.t0
    slots = [s for s, _, _ in assigned]
    if slots == arr.slot:                 # the node's arrays in its slots' order: as they are
        src: list[tuple[SlotResults, int]] = []
        idx = range(len(slots))
        pick = lambda col: col
    else:
        at = arr.index()
        # per record: the arrays its values come from and its entry there
        src = [(arr, at[s]) if s in at else (lacking, 0) for s in slots]
        idx = [i for _, i in src]
        if all(a is arr for a, _ in src):
            pick = lambda col: [col[i] for i in idx]
        else:
            pick = None
    def column(name: str) -> list:
        if pick is not None:
            return pick(getattr(arr, name))
        return [getattr(a, name)[i] for a, i in src]
    def sparse(name: str, empty: object) -> list:
        if pick is None:
            return [getattr(a, name).get(i, empty) for a, i in src]
        got = getattr(arr, name)
        return [got.get(i, empty) for i in idx] if got else [empty] * len(idx)

    if phase.members:     # a group's slots record their own task's phase (its index)
        values_col = [values_by_phase[id(phase.member_of(rank)[0])] for _, _, rank in assigned]
    else:
        values_col = [values_by_phase[id(phase)]] * len(assigned)
    armed = column("armed_ns")
    # what the coordinator adds to a slot's metrics: its node's clock, and when lead_ns is
    # known, the lead and how late the slot armed (a late start is data: late.py)
    clock = {OFFSET: node.offset_ns, ERROR: node.error_ns}
    if lead_ns is not None:
        clock[LEAD] = lead_ns
    own = {"slot": slots, "cpu": [c for _, c, _ in assigned],
           "metrics": _slot_metrics(sparse("metrics", None), clock, armed, t0),
           "extra": _slot_extra(sparse("extra", None), armed, [rank for _, _, rank in assigned])}
    for name, arrays, per in _DENSE:
        own[name] = [e / per for e in column(arrays)] if per else column(arrays)
    for name, arrays, empty, factory in _SPARSE_OF:
        own[name] = (sparse(arrays, empty) if factory is None     # else a value of its own
                     else [factory() if v is None else v for v in sparse(arrays, None)])
    series = any(SERIES in x for a in (arr, lacking) for x in a.extra.values())
    cols.extend(values_col, node.name, own, series)


def _slot_metrics(ms: list, clock: dict, armed: list[int], t0: int) -> list[dict]:
    """Each slot's record metrics: its own, its node's clock, and how late it armed where it
    did (in C where the extension is built: records.c's slot_metrics does this)."""
    got = None if _native is None else _native.slot_metrics(ms, clock, armed, t0, ARMED_LATE)
    if got is not None:
        return got
    metrics = []
    for m, a in zip(ms, armed):
        d = {**m, **clock} if m else dict(clock)
        if a:
            d[ARMED_LATE] = a - t0 if a > t0 else 0
        metrics.append(d)
    return metrics


def _slot_extra(xs: list, armed: list[int], ranks: list[int]) -> list[dict]:
    """Each slot's record extra: its own, when it armed, its rank (in C where built:
    records.c's slot_extra)."""
    got = None if _native is None else _native.slot_extra(xs, armed, ranks, ARMED_NS, RANK)
    if got is not None:
        return got
    extra = []
    for x, a, rank in zip(xs, armed, ranks):
        d = dict(x) if x else {}
        if a:
            d[ARMED_NS] = a
        d[RANK] = rank
        extra.append(d)
    return extra


def finish_phase(records: RecordColumns) -> None:
    """Each kernel's figures across its slots of a phase (a parallel task's jobs), in place;
    a phase without such a kernel stays columns."""
    names = dict.fromkeys(records.column("kernel"))
    if any(kernel(name).finish_phase is not None for name in names):
        made = records.records()
        for name in names:
            finish = kernel(name).finish_phase
            if finish is not None:
                finish([r for r in made if r.kernel == name])


@gc_paused
def collect(run: str, phase: Phase, nodes: list[Node] | tuple[Node, ...], work: Work, t0: int,
            results: Results, *, missing: str = "", go_ns: int | None = None,
            status: str = PhaseStatus.OK) -> PhaseOutcome:
    """The phase's outcome from its nodes' results (arrays, stamps in the coordinator's
    clock): one record per assigned slot (a slot without a result: an error saying
    `missing`) and their progress samples. Records of one phase share its params."""
    records = RecordColumns(run, t0)
    samples: list[Sample] = []
    lead = None if go_ns is None else t0 - go_ns
    # each phase's PHASE_COLUMNS values (a group's members' too), one tuple shared by every
    # node; keyed by identity (a Phase is not hashable): these phases are `phase` and its
    # members, alive for the whole call, so no id here can be reused meanwhile
    values_by_phase = {id(p): _phase_values(p) for p in (phase, *phase.members)}
    lacking = SlotResults.of({0: Result(status=Status.ERROR, error=missing or "no result")})
    for node in nodes:
        assigned = work.get(node.name)
        if not assigned:
            continue
        arr = results.get(node.name) or lacking
        _node_records(records, phase, values_by_phase, node,
                      [(a.place.slot, a.place.cpu, a.rank) for a in assigned], arr, lead,
                      lacking)
        if arr.samples:
            at = arr.index()
            for a in assigned:
                i = at.get(a.place.slot)
                if i is not None and i in arr.samples:
                    samples += samples_at(run, phase.index, node.name, a.rank, t0, arr, i)
    finish_phase(records)
    return PhaseOutcome(phase, t0, records, tuple(samples), go_ns, status)
