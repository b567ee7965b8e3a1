"""One run read the way every reader reads it (report, its --json and --html, hints, history,
compare, the run's end): its phases and their stored aggregates (aggregates.py, results
schema 9), its points summarised from them (agg_points.py), and what views ask of a phase
(its figures' values, its nodes, its slots), never every record: what is held grows with
phases x nodes, not with the records (docs/scale.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..extra_keys import MISSING_METRICS
from ..status import OK_TEXT, Status
from ..record import Record
from ..results.contract import StoredPhase
from .agg_points import points_of, spreads_of
from .aggregates import LATENESS, PartAgg, phase_aggregates
from .late import LateCount
from .phase_slots import PhaseSlots, of_parts
from .points import PointSummary
from .sketch import Sketch, merged
from .stats import Spread

Parts = Mapping[int, Sequence[PartAgg]]


@dataclass
class RunRead:
    phases: list[StoredPhase]
    parts: Parts                             # phase index -> its parts, its own first
    summaries: list[PointSummary]
    spreads: dict[str, dict[str, Spread]] = field(default_factory=dict)
    failed_records: list[Record] = field(default_factory=list)   # status not ok
    records: list[Record] | None = None      # in hand (of_records), else in the store

    def said_missing(self, store, run_id: str) -> list[Record]:
        """The records that said they missed a metric (only read when some did)."""
        if not any(ps[0].said for ps in self.parts.values() if ps):
            return []
        if self.records is not None:
            return [r for r in self.records if (r.extra or {}).get(MISSING_METRICS)]
        return store.said_missing(run_id)

    def slot_times(self, store, run_id: str) -> Iterable[tuple]:
        """Each ok record's per-slot time with its point (hints.slot_times), but those of
        kernels that do no work; none read when every kernel of the run is one of those."""
        from . import hints   # noqa: PLC0415 (hints import efficiency, which imports us)
        if self.records is not None:
            return hints.slot_times(self.records)
        from ..kernels import kernel   # noqa: PLC0415
        idle = [k for k in self.kernels() if kernel(k).sync_only]
        return store.ok_slot_times(run_id, idle) if self.kernels() - set(idle) else []

    def task_parts(self) -> Iterable[PartAgg]:
        """Each phase's records by task: a [[concurrent]] group's tasks' parts, another
        phase's own."""
        for ps in self.parts.values():
            yield from (ps[1:] if len(ps) > 1 else ps)

    def kernels(self) -> set[str]:
        """The kernels the run's records ran."""
        return {k for ps in self.parts.values() if ps for k in ps[0].kernels}

    def whole(self, index: int) -> PartAgg | None:
        """A phase's own part: every record of it."""
        got = self.parts.get(index)
        return got[0] if got else None

    def slots(self) -> dict[int, PhaseSlots]:
        """Every phase's slots (efficiency, quality)."""
        return {idx: of_parts(ps) for idx, ps in self.parts.items()}

    def failed(self) -> int:
        """Records of the run whose status is not ok."""
        return sum(a.records - a.status.get(Status.OK, 0) for a in self._wholes())

    def nodes_of(self) -> dict[int, set[str]]:
        """The nodes each phase's records ran on."""
        return {idx: set(ps[0].nodes) for idx, ps in self.parts.items() if ps}

    def late(self) -> LateCount:
        """Late starts over every phase (warm-up ones too), each phase once."""
        from .agg_points import _late   # noqa: PLC0415
        return _late(list(self._wholes()))

    def lateness(self) -> Sketch:
        """Lateness over the points' phases' ok records (the report's floor note)."""
        return merged(self._point_parts(LATENESS))

    def _point_parts(self, key: str) -> Iterable[Sketch]:
        for p in self.phases:
            if p.warmup or p.rep < 0:
                continue
            for a in self.parts.get(p.index, ()):
                if key in a.over:
                    yield a.over[key]

    def _wholes(self) -> Iterable[PartAgg]:
        return (ps[0] for ps in self.parts.values() if ps)


def read(store, run_id: str, failed: bool = True) -> RunRead:
    """A run from its stored aggregates (Store.aggregates); failed: read its failed records
    too (the views list them), else leave PointSummary.failed empty."""
    phases = store.phases(run_id)
    parts = store.aggregates(run_id, phases)
    fails = store.failed_records(run_id) if failed else []
    return RunRead(phases, parts, points_of(phases, parts, fails), spreads_of(phases, parts),
                   fails)


def of_records(records: Iterable[Record], phases: Iterable[StoredPhase] = ()) -> RunRead:
    """A run read from records in hand (tests, a run not stored): aggregated here; a phase
    the phases given lack is described by its first record (as summarize does)."""
    from collections import Counter   # noqa: PLC0415
    from .points import _parts   # noqa: PLC0415
    records = list(records)
    phases = list(phases)
    by: dict[int, list[Record]] = {}
    for r in records:
        by.setdefault(r.phase, []).append(r)
    known = {p.index for p in phases}
    phases += [_parts(None, i, by[i], Counter())[0][0] for i in sorted(set(by) - known)]
    phases.sort(key=lambda p: p.index)
    parts = {p.index: phase_aggregates(p, by.get(p.index, [])) for p in phases}
    fails = [r for idx in sorted(by) for r in by[idx] if r.status != OK_TEXT]
    return RunRead(phases, parts, points_of(phases, parts, fails), spreads_of(phases, parts),
                   fails, records)
