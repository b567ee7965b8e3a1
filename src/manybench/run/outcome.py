"""What one phase leaves behind, as one frozen value the phase loop (run/coordinator.py) passes
on: its records and progress samples made from the slots' results, its T0, when its go was
sent, the telemetry taken with it and the warnings it raised. Committing a phase is storing
its outcome; nothing about a phase travels beside it."""
from __future__ import annotations

from dataclasses import dataclass

from ..engines.base import Node, Results, Work
from ..kernels import Result, kernel
from ..kernels import figures as F
from ..model import Phase
from ..node.arrays import SlotResults
from ..record import Record
from ..results.contract import Sample, TelemetryRow
from .samples import samples_at

ARMED_LATE, LEAD = F.ARMED_LATE.name, F.LEAD.name
OFFSET, ERROR = F.CLOCK_OFFSET.name, F.CLOCK_ERROR.name


@dataclass(frozen=True)
class Said:
    """A warning a phase raised (run/warnings.py stores and tells it)."""
    kind: str
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
    records: tuple[Record, ...]
    samples: tuple[Sample, ...] = ()
    go_ns: int | None = None      # when its go was sent (the phase cycle); None: not run
    status: str = "ok"            # the stored phase's: ok | interrupted
    telemetry: tuple[TelemetryRow, ...] = ()
    said: tuple[Said, ...] = ()

    @property
    def failed(self) -> int:
        """Its records whose status is not ok."""
        return sum(r.status != "ok" for r in self.records)


@dataclass(frozen=True)
class InFlight:
    """A phase whose go was sent and whose results are not taken yet: what an interrupt
    must still keep of it."""
    phase: Phase
    nodes: tuple[Node, ...]
    work: Work
    t0: int
    go_ns: int


def make_record(run: str, phase: Phase, node: Node, slot: int, cpu: int, rank: int, t0: int,
                res: Result, lead_ns: int | None = None) -> Record:
    """A slot's result (stamps already in the coordinator's clock) as a record; `lead_ns`:
    the lead its T0 was given (run/schedule.py adapts it)."""
    return _record(run, phase, phase.record_params(), node, slot, cpu, rank, t0, lead_ns,
                   SlotResults.of({slot: res}), 0)


def _record(run: str, phase: Phase, params: dict, node: Node, slot: int, cpu: int, rank: int,
            t0: int, lead_ns: int | None, arr: SlotResults, i: int) -> Record:
    """Entry i of a node's arrays as a record (params: the phase's, shared by its records)."""
    return _node_records(run, phase, {id(phase): params}, node, [(slot, cpu, rank)], arr, t0,
                         lead_ns, arr)[0]


def _node_records(run: str, phase: Phase, params: dict[int, dict], node: Node,
                  assigned: list[tuple[int, int, int]], arr: SlotResults, t0: int,
                  lead_ns: int | None, lacking: SlotResults) -> list[Record]:
    """One node's records of a phase, from its arrays: (slot, cpu, rank) each; a slot the
    arrays lack gets `lacking`'s one entry. A loop over columns, the phase's and the node's
    values taken once (a phase of 64,000 slots makes 64,000 records)."""
    at = arr.index()
    offset, error, name = node.offset_ns, node.error_ns, node.name
    members = phase.members
    out = []
    for slot, cpu, rank in assigned:
        i = at.get(slot)
        got = arr
        if i is None:
            got, i = lacking, 0
        # a group's slots record their own task's phase (under the group's index)
        mine = phase.member_of(rank)[0] if members else phase
        m = got.metrics.get(i)
        metrics = dict(m) if m else {}
        metrics[OFFSET] = offset
        metrics[ERROR] = error
        x = got.extra.get(i)
        extra = dict(x) if x else {}
        armed = got.armed_ns[i]
        if armed:
            extra["armed_ns"] = armed
            # a late start is data: how long after T0 the slot began waiting (late.py)
            metrics[ARMED_LATE] = armed - t0 if armed > t0 else 0
        if lead_ns is not None:
            metrics[LEAD] = lead_ns
        extra["rank"] = rank
        out.append(Record(run, mine.index, mine.task.name, mine.kernel, mine.variant, mine.rep,
                          mine.workers, name, slot, cpu, t0, got.start_ns[i], got.end_ns[i],
                          got.elapsed_ns[i] / 1e9, got.ops[i], got.bytes[i], got.status[i],
                          got.error.get(i, ""), params[id(mine)], metrics, got.hist.get(i),
                          extra))
    return out


def finish_phase(records: list[Record]) -> None:
    """Each kernel's figures across its slots of a phase (a parallel task's jobs), in place."""
    for name in dict.fromkeys(r.kernel for r in records):
        finish = kernel(name).finish_phase
        if finish is not None:
            finish([r for r in records if r.kernel == name])


def collect(run: str, phase: Phase, nodes: list[Node] | tuple[Node, ...], work: Work, t0: int,
            results: Results, *, missing: str = "", go_ns: int | None = None,
            status: str = "ok") -> PhaseOutcome:
    """The phase's outcome from its nodes' results (arrays, stamps in the coordinator's
    clock): one record per assigned slot (a slot without a result: an error saying
    `missing`) and their progress samples. Records of one phase share its params."""
    records: list[Record] = []
    samples: list[Sample] = []
    lead = None if go_ns is None else t0 - go_ns
    params = {id(phase): phase.record_params()}
    for m in phase.members:
        params[id(m)] = m.record_params()
    lacking = SlotResults.of({0: Result(status="error", error=missing or "no result")})
    for node in nodes:
        assigned = work.get(node.name)
        if not assigned:
            continue
        arr = results.get(node.name) or lacking
        records += _node_records(run, phase, params, node, [(a.place.slot, a.place.cpu, a.rank)
                                                            for a in assigned],
                                 arr, t0, lead, lacking)
        if arr.samples:
            at = arr.index()
            for a in assigned:
                i = at.get(a.place.slot)
                if i is not None and i in arr.samples:
                    samples += samples_at(run, phase.index, node.name, a.rank, t0, arr, i)
    finish_phase(records)
    return PhaseOutcome(phase, t0, tuple(records), tuple(samples), go_ns, status)
