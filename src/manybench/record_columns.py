"""A phase's records as columns: what run/outcome.collect makes from the nodes' arrays and
results/store.write_phase stores with one executemany, one entry per record.

A phase of 64,000 slots would otherwise make 64,000 Record objects only to take them apart
again into rows. The columns read as a sequence of Records (record.Record), made once, on
the first read one by one (a kernel's finish_phase, a report's progress line, a test):
from then on those Records are the phase's records, and the rows are taken from them (a
kernel may have changed one). Until then each record's dicts (metrics, extra) are the
columns' own, so a change made through record(i) is a change of the column.
"""
from __future__ import annotations

from itertools import repeat
from typing import Any, Iterator, Sequence, overload

from .extra_keys import SERIES
from .record import FIELD_NAMES, Record, from_values
from .record_table import RECORD, fields_of, generated_function

_TABLE = fields_of(RECORD)
# what every record of the columns shares: the run's (run, T0)
RUN = tuple(f.name for f in _TABLE if f.source == "run")
# what each record takes from its phase (or a group member's), in Record's field order
PHASE_COLUMNS = tuple(f.name for f in _TABLE if f.source == "phase")
# each record's own: where its slot is (node, slot, cpu) and what it measured
SLOT_COLUMNS = tuple(f.name for f in _TABLE if f.source in ("place", "slot"))
# a record's own values that are often one for a whole phase (every slot ok, no error, no
# histogram, the same count of ops or bytes): the store writes such a value once too
ALIKE = tuple(f.name for f in _TABLE if f.alike)
# the phase's values bound as they are (params, JSON, is shared by identity: rows())
_PHASE_PLAIN = tuple((at, name) for at, name in enumerate(PHASE_COLUMNS) if name != "params")

# (columns, {name: its new values}) -> each of SLOT_COLUMNS but the node extended by them: a
# line per field (a getattr and a method call each cost twice the line: once per node per phase)
_extend = generated_function(
    "extend", ["cols", "new"],
    [f"cols.{name} += new[{name!r}]" for name in SLOT_COLUMNS if name != "node"], {})


class RecordColumns(Sequence[Record]):
    def __init__(self, run: str, t0: int, **shared: Any) -> None:
        """run, t0 and any other field the run's records share (RUN), by name."""
        self.run, self.t0 = run, t0
        self.shared = {"run": run, "t0_ns": t0, **shared}
        if set(self.shared) != set(RUN):
            raise TypeError(f"RecordColumns takes the run's fields {', '.join(RUN)}, not "
                            f"{', '.join(self.shared)}")
        self.phase_values: list[tuple] = []   # per record: its phase's PHASE_COLUMNS values
        for name in SLOT_COLUMNS:
            setattr(self, name, [])
        self.built_records: list[Record] | None = None
        # the one tuple of phase values every record has, while they have one (a phase, not
        # a group): its columns are then that value repeated, not read record by record
        self.one_phase_values: tuple | None = None
        self.series = False        # whether a record's extra holds "series" (store.py)

    def add(self, phase_values: tuple, **own: Any) -> None:
        """One record: its phase's PHASE_COLUMNS values, then its own (SLOT_COLUMNS), by name."""
        self._note_phase_values([phase_values])
        self.series = self.series or SERIES in own["extra"]
        self.phase_values.append(phase_values)
        for name in SLOT_COLUMNS:
            getattr(self, name).append(own[name])

    def extend(self, phase_values: list[tuple], node: str, columns: dict[str, list],
               series: bool = True) -> None:
        """One node's records at once: each record's phase's PHASE_COLUMNS values, and a list
        per field of SLOT_COLUMNS but the node (by name). series: whether an extra may hold
        "series" (False: the caller knows none does)."""
        self._note_phase_values(phase_values)
        self.series = self.series or (series and any(SERIES in x
                                                     for x in columns["extra"]))
        self.phase_values += phase_values
        self.node += [node] * len(phase_values)
        _extend(self, columns)

    def _note_phase_values(self, phase_values: list[tuple]) -> None:
        """Keep one_phase_values up to date with these records' phase values added."""
        if not phase_values:
            return
        first = phase_values[0]
        if not self.phase_values:
            self.one_phase_values = first
        if self.one_phase_values is not None and (
                first is not self.one_phase_values
                or phase_values.count(first) != len(phase_values)):
            self.one_phase_values = None     # (count: a C loop, identity first)

    # -- one by one ----------------------------------------------------------------------------
    def record(self, i: int) -> Record:
        """Record i (its dicts the columns' own: a change to them is a change of the
        column); once the records are made, that one."""
        if self.built_records is not None:
            return self.built_records[i]
        return Record(**self.shared, **dict(zip(PHASE_COLUMNS, self.phase_values[i])),
                      **{name: getattr(self, name)[i] for name in SLOT_COLUMNS})

    def records(self) -> list[Record]:
        """Every record as a Record, made once; from then on, the phase's records."""
        if self.built_records is None:
            self.built_records = self._make()
        return self.built_records

    def passing(self) -> list[Record]:
        """The records for one pass (a phase's aggregates), not kept when they were not made
        yet: the phase's insert then reads the columns (_column_rows), not 64,000 Records."""
        return self.built_records if self.built_records is not None else self._make()

    def _make(self) -> list[Record]:
        """Every record, made a column at a time (as record(i) makes each)."""
        return list(map(from_values, *[self.column(name) for name in FIELD_NAMES]))

    def __len__(self) -> int:
        return len(self.node)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: Any) -> Any:
        return self.records()[i]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    # -- a column at a time -----------------------------------------------------------------------
    def column(self, name: str) -> Sequence[Any]:
        """A field's values, one per record (from the Records once they are made)."""
        if self.built_records is not None:
            return [getattr(r, name) for r in self.built_records]
        if name in SLOT_COLUMNS:
            return getattr(self, name)
        if name in self.shared:
            return [self.shared[name]] * len(self)
        at = PHASE_COLUMNS.index(name)
        if self.one_phase_values is not None:
            return [self.one_phase_values[at]] * len(self)
        return [h[at] for h in self.phase_values]

    def rows(self, encoded: dict[str, Sequence[Any]], share: bool = True
             ) -> tuple[dict[str, Any], Iterator[tuple]] | None:
        """The records' values for the store, with the columns in `encoded` (the JSON ones,
        encoded: params, metrics, hist, extra) in place of the values: those every record
        shares (its run and T0, and its phase's PHASE_COLUMNS values when the records are of
        one phase), by field, and an iterator of each record's other values in Record's field
        order; None once the records are made (the store takes them one by one then).
        share=False: none apart (every value in each row, the shared ones repeated)."""
        if self.built_records is not None:
            return None
        n = len(self)
        first = self.one_phase_values
        shared: dict[str, Any] = dict(self.shared)
        cols = {name: encoded.get(name, getattr(self, name)) for name in SLOT_COLUMNS}
        if n and first is not None:                      # one phase: its values once
            shared.update((name, first[at]) for at, name in _PHASE_PLAIN)
            params = encoded.get("params") or self.column("params")
            if all(p is params[0] for p in params):      # its params, encoded once
                shared["params"] = params[0]
            else:
                cols["params"] = params
        else:
            for at, name in _PHASE_PLAIN:
                cols[name] = [h[at] for h in self.phase_values]
            cols["params"] = encoded.get("params") or self.column("params")
        if not share:
            cols.update((name, repeat(value, n)) for name, value in shared.items())
            shared = {}
        elif n:
            for name in ALIKE:      # one value in every record: written once, like the phase's
                col = cols[name]
                if col.count(col[0]) == n:     # equal is enough: the columns' affinity
                    shared[name] = col[0]      # stores 1 and 1.0 alike, as bound
        own = [cols[name] for name in FIELD_NAMES if name not in shared]
        return shared, zip(*own)
