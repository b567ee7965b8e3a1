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
from .record import FIELDS, Record

# what each record takes from its phase (or a group member's): index, task, kernel,
# variant, rep, workers, params, in Record's field order
HEAD = ("phase", "task", "kernel", "variant", "rep", "workers", "params")
OWN = ("node", "slot", "cpu", "start_ns", "end_ns", "elapsed_s", "ops", "bytes", "status",
       "error", "metrics", "hist", "extra")
assert tuple(f.name for f in FIELDS) == ("run", *HEAD[:6], *OWN[:3], "t0_ns", *OWN[3:10],
                                         "params", *OWN[10:])


# a record's own values that are often one for a whole phase (every slot ok, no error, no
# histogram, the same count of ops or bytes): the store writes such a value once too
ALIKE = ("ops", "bytes", "status", "error", "hist")


class RecordColumns(Sequence[Record]):
    def __init__(self, run: str, t0: int) -> None:
        self.run, self.t0 = run, t0
        self.head: list[tuple] = []          # per record: its phase's HEAD values
        for name in OWN:
            setattr(self, name, [])
        self.made: list[Record] | None = None
        # the one HEAD every record has, while they have one (a phase not a group): its
        # columns are then that value repeated, not read record by record
        self.one_head: tuple | None = None
        self.series = False        # whether a record's extra holds "series" (store.py)

    def add(self, head: tuple, node: str, slot: int, cpu: int, start_ns: int, end_ns: int,
            elapsed_s: float, ops: int, nbytes: int, status: str, error: str, metrics: dict,
            hist: dict | None, extra: dict) -> None:
        """One record: its phase's HEAD values, then its own."""
        self._heads([head])
        self.series = self.series or SERIES in extra
        self.head.append(head)
        self.node.append(node)
        self.slot.append(slot)
        self.cpu.append(cpu)
        self.start_ns.append(start_ns)
        self.end_ns.append(end_ns)
        self.elapsed_s.append(elapsed_s)
        self.ops.append(ops)
        self.bytes.append(nbytes)
        self.status.append(status)
        self.error.append(error)
        self.metrics.append(metrics)
        self.hist.append(hist)
        self.extra.append(extra)

    def extend(self, heads: list[tuple], node: str, slot: list[int], cpu: list[int],
               start_ns: list[int], end_ns: list[int], elapsed_s: list[float], ops: list[int],
               nbytes: list[int], status: list[str], error: list[str], metrics: list[dict],
               hist: list[dict | None], extra: list[dict], series: bool = True) -> None:
        """One node's records at once, a list per field (its name repeated): `add` a
        column at a time. series: whether an extra may hold "series" (False: the caller
        knows none does)."""
        self._heads(heads)
        self.series = self.series or (series and any(SERIES in x for x in extra))
        self.head += heads
        self.node += [node] * len(slot)
        self.slot += slot
        self.cpu += cpu
        self.start_ns += start_ns
        self.end_ns += end_ns
        self.elapsed_s += elapsed_s
        self.ops += ops
        self.bytes += nbytes
        self.status += status
        self.error += error
        self.metrics += metrics
        self.hist += hist
        self.extra += extra

    def _heads(self, heads: list[tuple]) -> None:
        """Keep one_head up to date with these records' HEADs added."""
        if not heads:
            return
        first = heads[0]
        if not self.head:
            self.one_head = first
        if self.one_head is not None and (first is not self.one_head
                                          or heads.count(first) != len(heads)):
            self.one_head = None     # (count: a C loop, identity first)

    # -- one by one ----------------------------------------------------------------------------
    def record(self, i: int) -> Record:
        """Record i (its dicts the columns' own: a change to them is a change of the
        column); once the records are made, that one."""
        if self.made is not None:
            return self.made[i]
        h = self.head[i]
        return Record(self.run, h[0], h[1], h[2], h[3], h[4], h[5], self.node[i],
                      self.slot[i], self.cpu[i], self.t0, self.start_ns[i], self.end_ns[i],
                      self.elapsed_s[i], self.ops[i], self.bytes[i], self.status[i],
                      self.error[i], h[6], self.metrics[i], self.hist[i], self.extra[i])

    def records(self) -> list[Record]:
        """Every record as a Record, made once; from then on, the phase's records."""
        if self.made is None:
            self.made = [self.record(i) for i in range(len(self.node))]
        return self.made

    def passing(self) -> list[Record]:
        """The records for one pass (a phase's aggregates), not kept when they were not made
        yet: the phase's insert then reads the columns (_column_rows), not 64,000 Records."""
        return self.made if self.made is not None else [self.record(i)
                                                         for i in range(len(self.node))]

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
        if self.made is not None:
            return [getattr(r, name) for r in self.made]
        if name in OWN:
            return getattr(self, name)
        if name == "run":
            return [self.run] * len(self)
        if name == "t0_ns":
            return [self.t0] * len(self)
        at = HEAD.index(name)
        if self.one_head is not None:
            return [self.one_head[at]] * len(self)
        return [h[at] for h in self.head]

    def rows(self, encoded: dict[str, Sequence[Any]], share: bool = True
             ) -> tuple[dict[str, Any], Iterator[tuple]] | None:
        """The records' values for the store, with the columns in `encoded` (the JSON ones,
        encoded: params, metrics, hist, extra) in place of the values: those every record
        shares (its run and T0, and its phase's HEAD values when the records are of one
        phase), by field, and an iterator of each record's other values in Record's field
        order; None once the records are made (the store takes them one by one then).
        share=False: none apart (every value in each row, the shared ones repeated)."""
        if self.made is not None:
            return None
        n = len(self)
        first = self.one_head
        shared: dict[str, Any] = {"run": self.run, "t0_ns": self.t0}
        cols = {name: encoded.get(name, getattr(self, name)) for name in OWN}
        if n and first is not None:                      # one phase: its values once
            shared.update(zip(HEAD[:6], first[:6]))
            params = encoded.get("params") or self.column("params")
            if all(p is params[0] for p in params):      # its params, encoded once
                shared["params"] = params[0]
            else:
                cols["params"] = params
        else:
            for k, name in enumerate(HEAD[:6]):
                cols[name] = [h[k] for h in self.head]
            cols["params"] = encoded.get("params") or self.column("params")
        if not share:
            cols.update((name, repeat(value, n)) for name, value in shared.items())
            shared = {}
        elif n:
            for name in ALIKE:      # one value in every record: written once, like the phase's
                col = cols[name]
                if col.count(col[0]) == n:     # equal is enough: the columns' affinity
                    shared[name] = col[0]      # stores 1 and 1.0 alike, as bound
        own = [cols[f.name] for f in FIELDS if f.name not in shared]
        return shared, zip(*own)
