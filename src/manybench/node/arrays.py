"""A node's results of one phase as parallel arrays: what crosses back to the coordinator.

One entry per slot, entry i is slot[i]'s: its stamps, counts and status as plain lists (what
every slot has), its error, metrics, extra, histogram and progress samples only where it has
them (maps from entry to value). So a phase's reply is one message of a few arrays, not one
object per slot, and the coordinator moves stamps into its clock and makes records a column
at a time (engines/base.py, run/outcome.py).

A SlotResults also reads as a mapping slot -> Result, for the few places that take one slot
at a time (failures, tests).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

from .wire_types import Extra, Hist, Metrics, Result

STAMPS = ("start_ns", "end_ns", "armed_ns")   # in the clock of the node that took them


@dataclass(frozen=True)
class SlotResults:
    slot: list[int] = field(default_factory=list)
    start_ns: list[int] = field(default_factory=list)     # 0: not stamped (failed before)
    end_ns: list[int] = field(default_factory=list)
    armed_ns: list[int] = field(default_factory=list)
    elapsed_ns: list[int] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    error: dict[int, str] = field(default_factory=dict)      # entry -> error, where not ""
    metrics: dict[int, Metrics] = field(default_factory=dict)   # entry -> metrics, where any
    extra: dict[int, Extra] = field(default_factory=dict)
    hist: dict[int, Hist] = field(default_factory=dict)
    # entry -> [[t_ns...], [done...]]
    samples: dict[int, list[list[int] | list[float]]] = field(default_factory=dict)
    sample_unit: dict[int, str] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Mapping[int, Result]) -> SlotResults:
        """Per-slot results as arrays, by slot (one pass: it runs on every node every phase)."""
        slots = sorted(results)
        start, end, armed, elapsed, ops, nbytes, status = [], [], [], [], [], [], []
        error, metrics, extra, hist, samples, unit = {}, {}, {}, {}, {}, {}
        for i, s in enumerate(slots):
            r = results[s]
            start.append(r.start_ns)
            end.append(r.end_ns)
            armed.append(r.armed_ns)
            elapsed.append(r.elapsed_ns)
            ops.append(r.ops)
            nbytes.append(r.bytes)
            status.append(r.status)
            if r.error:
                error[i] = r.error
            if r.metrics:
                metrics[i] = r.metrics
            if r.extra:
                extra[i] = r.extra
            if r.hist:
                hist[i] = r.hist
            if r.samples:
                samples[i] = [[t for t, _ in r.samples], [d for _, d in r.samples]]
            if r.sample_unit:
                unit[i] = r.sample_unit
        out = object.__new__(cls)     # frozen: its __init__ would set each field by a call
        out.__dict__.update(slot=slots, start_ns=start, end_ns=end, armed_ns=armed,
                            elapsed_ns=elapsed, ops=ops, bytes=nbytes, status=status,
                            error=error, metrics=metrics, extra=extra, hist=hist,
                            samples=samples, sample_unit=unit)
        return out

    def moved(self, **columns: list | dict) -> SlotResults:
        """A copy with these columns replaced (dataclasses.replace costs a call per field)."""
        out = object.__new__(SlotResults)
        out.__dict__.update(self.__dict__, **columns)
        return out

    def result(self, i: int) -> Result:
        """Entry i as a Result (its dicts are this object's: copy before changing them)."""
        got = self.samples.get(i)
        return Result(start_ns=self.start_ns[i], end_ns=self.end_ns[i],
                      elapsed_ns=self.elapsed_ns[i], armed_ns=self.armed_ns[i], ops=self.ops[i],
                      bytes=self.bytes[i], status=self.status[i], error=self.error.get(i, ""),
                      metrics=self.metrics.get(i, {}), hist=self.hist.get(i),
                      extra=self.extra.get(i, {}), samples=list(zip(*got)) if got else [],
                      sample_unit=self.sample_unit.get(i, ""))

    # -- read as a mapping slot -> Result ------------------------------------------------------
    def index(self) -> dict[int, int]:
        """slot -> entry."""
        return {s: i for i, s in enumerate(self.slot)}

    def __len__(self) -> int:
        return len(self.slot)

    def __iter__(self) -> Iterator[int]:
        return iter(self.slot)

    def __contains__(self, slot: object) -> bool:
        return slot in self.slot

    def __getitem__(self, slot: int) -> Result:
        return self.result(self.slot.index(slot))

    def get(self, slot: int, default: Result | None = None) -> Result | None:
        return self[slot] if slot in self.slot else default

    def keys(self) -> list[int]:
        return list(self.slot)

    def items(self) -> Iterator[tuple[int, Result]]:
        return ((s, self.result(i)) for i, s in enumerate(self.slot))

    def values(self) -> Iterator[Result]:
        return (self.result(i) for i in range(len(self.slot)))

    def to_dict(self) -> dict[int, Result]:
        return dict(self.items())
