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

from dataclasses import field
from typing import Any, Iterator, Mapping

from ..record_table import ARRAYS, fields_of, generated_function, layer_dataclass
from .wire_types import Extra, Hist, Metrics, Result  # noqa: F401  (the maps: named by the table's types)

FIELDS = fields_of(ARRAYS)
# in the clock of the node that took them (engines/base.py moves them)
STAMPS = tuple(f.name for f in FIELDS if f.stamp and not f.sparse)
_DENSE = tuple(f.name for f in FIELDS if not f.sparse)
_SPARSE = tuple(f for f in FIELDS if f.sparse)

# results (slot -> Result) -> SlotResults' fields: one pass over the slots, a line per field
# (a field's attribute read inline costs a fifth of a getattr or an attrgetter's)
_columns = generated_function("columns", ["results"], [
    "slots = sorted(results)",
    *(f"{f.name} = {{}}" if f.sparse else f"{f.name} = []" for f in FIELDS),
    "for i, s in enumerate(slots):",
    "    r = results[s]",
    *(f"    {f.name}.append(r.{f.name})" for f in FIELDS if not f.sparse),
    *(line for f in _SPARSE for line in (
        f"    if r.{f.name}:",
        f"        {f.name}[i] = " + (f"pack_{f.name}(r.{f.name})" if f.packed else f"r.{f.name}"))),
    "return {'slot': slots, " + ", ".join(f"{f.name!r}: {f.name}" for f in FIELDS) + "}"],
    {f"pack_{f.name}": f.packed[1] for f in _SPARSE if f.packed})


@layer_dataclass(ARRAYS, frozen=True)
class SlotResults:
    """A node's slots' results, entry i slot[i]'s: a list per field of the record table's
    `arrays` layer, or, for a sparse one, a map entry -> value where it has one (a field's
    `packed` form where it has one). Keyword-only."""
    slot: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, results: Mapping[int, Result]) -> SlotResults:
        """Per-slot results as arrays, by slot (one pass: it runs on every node every phase)."""
        out = object.__new__(cls)     # frozen: its __init__ would set each field by a call
        out.__dict__.update(_columns(results))
        return out

    def moved(self, **columns: list | dict) -> SlotResults:
        """A copy with these columns replaced (dataclasses.replace costs a call per field)."""
        out = object.__new__(SlotResults)
        out.__dict__.update(self.__dict__, **columns)
        return out

    def result(self, i: int) -> Result:
        """Entry i as a Result (its dicts are this object's: copy before changing them)."""
        values: dict[str, Any] = {name: getattr(self, name)[i] for name in _DENSE}
        for f in _SPARSE:
            got = getattr(self, f.name).get(i)
            if got is None:
                values[f.name] = f.empty()
            else:
                values[f.name] = got if f.packed is None else f.packed[2](got)
        return Result(**values)

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
