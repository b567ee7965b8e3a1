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
    metrics = dict(arr.metrics.get(i, ()))
    metrics[OFFSET] = node.offset_ns
    metrics[ERROR] = node.error_ns
    extra = dict(arr.extra.get(i, ()))
    armed = arr.armed_ns[i]
    if armed:
        extra["armed_ns"] = armed
        # a late start is data: how long after T0 the slot began waiting (analysis/late.py)
        metrics[ARMED_LATE] = max(0, armed - t0)
    if lead_ns is not None:
        metrics[LEAD] = lead_ns
    extra["rank"] = rank
    return Record(run, phase.index, phase.task.name, phase.kernel, phase.variant, phase.rep,
                  phase.workers, node.name, slot, cpu, t0, arr.start_ns[i], arr.end_ns[i],
                  arr.elapsed_ns[i] / 1e9, arr.ops[i], arr.bytes[i], arr.status[i],
                  arr.error.get(i, ""), params, metrics, arr.hist.get(i), extra)


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
        at = arr.index()
        for a in assigned:
            slot = a.place.slot
            got, i = (arr, at[slot]) if slot in at else (lacking, 0)
            # a group's slots record their own task's phase (under the group's index)
            mine = phase.member_of(a.rank)[0] if phase.members else phase
            records.append(_record(run, mine, params[id(mine)], node, slot, a.place.cpu,
                                   a.rank, t0, lead, got, i))
            if i in got.samples:
                samples += samples_at(run, phase.index, node.name, a.rank, t0, got, i)
    finish_phase(records)
    return PhaseOutcome(phase, t0, tuple(records), tuple(samples), go_ns, status)
