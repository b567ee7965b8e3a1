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
from ..record import Record
from ..results.contract import Sample, TelemetryRow
from .samples import samples_of


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
    metrics = dict(res.metrics)
    metrics.update(clock_offset_ns=node.offset_ns, clock_error_ns=node.error_ns)
    extra = dict(res.extra)
    if res.armed_ns:
        extra["armed_ns"] = res.armed_ns
        # a late start is data: how long after T0 the slot began waiting (analysis/late.py)
        metrics[F.ARMED_LATE.name] = max(0, res.armed_ns - t0)
    if lead_ns is not None:
        metrics[F.LEAD.name] = lead_ns
    extra["rank"] = rank
    return Record(
        run=run, phase=phase.index, task=phase.task.name, kernel=phase.kernel,
        variant=phase.variant, rep=phase.rep, workers=phase.workers, node=node.name,
        slot=slot, cpu=cpu, t0_ns=t0, start_ns=res.start_ns, end_ns=res.end_ns,
        elapsed_s=res.elapsed_ns / 1e9, ops=res.ops, bytes=res.bytes, status=res.status,
        error=res.error, params=phase.record_params(),
        metrics=metrics, hist=res.hist, extra=extra)


def finish_phase(records: list[Record]) -> None:
    """Each kernel's figures across its slots of a phase (a parallel task's jobs), in place."""
    for name in dict.fromkeys(r.kernel for r in records):
        finish = kernel(name).finish_phase
        if finish is not None:
            finish([r for r in records if r.kernel == name])


def collect(run: str, phase: Phase, nodes: list[Node] | tuple[Node, ...], work: Work, t0: int,
            results: Results, *, missing: str = "", go_ns: int | None = None,
            status: str = "ok") -> PhaseOutcome:
    """The phase's outcome from its slots' results: one record per assigned slot (a slot
    without a result: an error saying `missing`) and their progress samples."""
    records: list[Record] = []
    samples: list[Sample] = []
    lead = None if go_ns is None else t0 - go_ns
    for node in nodes:
        for a in work.get(node.name, []):
            res = results.get(node.name, {}).get(a.place.slot)
            if res is None:
                res = Result(status="error", error=missing or "no result")
            # a group's slots record their own task's phase (under the group's index)
            mine = phase.member_of(a.rank)[0] if phase.members else phase
            records.append(make_record(run, mine, node, a.place.slot, a.place.cpu, a.rank, t0,
                                       res, lead))
            samples += samples_of(run, phase.index, node.name, a.rank, t0, res)
    finish_phase(records)
    return PhaseOutcome(phase, t0, tuple(records), tuple(samples), go_ns, status)
