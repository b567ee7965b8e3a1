"""The records table as export's rows, read a phase at a time (issue 30): what `export`
writes in every format, in memory that does not grow with the records.

The rows and columns are frames.record_rows' (the contract's columns, rank, stdout, stderr,
missing_metrics, the flattened params and metrics, extra and its flattened scalars), in the
order of Store.records (run by start, phase, node, slot), but made straight from results.db's
rows, never as Records, and one phase's at a time (64,000 at 1,000 nodes x 64 slots):

  1. the phases: one cheap pass (run, phase, first and last rowid: a phase's rows are stored
     together, record_read.phases), ordered as Store.records orders them;
  2. the survey, when flattened columns or column types are wanted: every record's params,
     metrics and extra once, for their keys in the order first seen and the types each holds
     (a Parquet file's schema is fixed before its first row);
  3. the rows, a batch at a time.

Both passes read one snapshot of the file (Store.snapshot), so no row read in the second can
hold a key the survey did not see, even while a run writes the file.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from orjson import loads as _orjson_loads

from ..extra_keys import MISSING_METRICS, RANK, STDERR, STDOUT
from ..record import COLUMNS, FIELDS
from .export import BATCH_ROWS
from .frames import EXTRA, EXTRA_COLUMNS, METRIC, NOT_IN_EXTRA, PARAM
from .record_read import damaged, loads
from .record_rows import json_encoder

_SCALARS = frozenset({type(None), str, int, float, bool})   # frames._scalar's
_SQL_KIND = {"TEXT": str, "INTEGER": int, "REAL": float}
# the stored column's type (record.py declares it), for every contract column but the JSON ones
_KINDS = {f.name: _SQL_KIND[f.metadata["sql"].split()[0]] for f in FIELDS}
_SELECT = ", ".join(f"rec.{c}" for c in COLUMNS) + ", rec.extra"
_P, _M, _X = COLUMNS.index("params"), COLUMNS.index("metrics"), len(COLUMNS)
_SLOT = COLUMNS.index("slot")
_compact = json_encoder()


@dataclass(frozen=True)
class Part:
    """One phase of one run: its rows lie between rowids lo and hi."""
    run: str
    phase: int
    lo: int
    hi: int


def parts(con: sqlite3.Connection, run: str | None = None) -> list[Part]:
    """The phases holding records, in Store.records' order: by the run's start (a run of no
    row in runs first, as SQL sorts NULL), run id, phase."""
    started = dict(con.execute("SELECT id, started_ns FROM runs"))
    got = con.execute("SELECT run, phase, MIN(rowid), MAX(rowid) FROM records "
                      + ("WHERE run=? " if run is not None else "") + "GROUP BY run, phase",
                      (run,) if run is not None else ()).fetchall()

    def order(p: tuple) -> tuple:
        s = started.get(p[0])
        return (s is not None, s or 0, p[0], p[1])
    return [Part(*p) for p in sorted(got, key=order)]


def _phase_rows(con: sqlite3.Connection, part: Part, select: str, ordered: bool = True
                ) -> Iterator[list[tuple]]:
    """A phase's rows in batches, ordered by node and slot (SQLite sorts the one phase), or
    as stored when not `ordered` (in that order already: Survey.in_order)."""
    cur = con.execute(f"SELECT {select} FROM records rec WHERE rec.rowid BETWEEN ? AND ? "
                      "AND rec.run=? AND rec.phase=?"
                      + (" ORDER BY rec.node, rec.slot" if ordered else " ORDER BY rec.rowid"),
                      (part.lo, part.hi, part.run, part.phase))
    while batch := cur.fetchmany(BATCH_ROWS):
        yield batch


class _Decoder:
    """A row's JSON columns as objects, a phase's shared params text decoded once; a text
    that is not an object is the damage Store.records names."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.params: dict[str, tuple[dict, str]] = {}     # text -> (object, compact text)

    def obj(self, text: str, column: str, run: str, phase: int, slot: int) -> dict:
        try:
            got = loads(text)
            if type(got) is not dict:
                raise TypeError(f"a {type(got).__name__}, not an object")
        except (ValueError, TypeError, AttributeError) as e:
            raise damaged(self.path, column, run, phase, slot, e) from None
        return got

    def keys(self, text: str, column: str, run: str, phase: int, slot: int) -> dict:
        """obj() for the survey, which needs its keys and their values' types only: orjson's
        object as it is (loads() checks it further for the values it reads differently)."""
        try:
            got = _orjson_loads(text)
        except ValueError:
            return self.obj(text, column, run, phase, slot)
        return got if got.__class__ is dict else self.obj(text, column, run, phase, slot)

    def param(self, text: str, run: str, phase: int, slot: int) -> tuple[dict, str]:
        got = self.params.get(text)
        if got is None:
            if len(self.params) > 4096:     # a sweep of many points: keep it bounded
                self.params.clear()
            obj = self.obj(text, "params", run, phase, slot)
            got = self.params[text] = (obj, _compact(obj))
        return got


@dataclass
class Survey:
    """The keys of the records' params, metrics and extra, each in the order first seen with
    a scalar value, and the types of the values each took (frames.record_rows' columns)."""
    params: dict[str, set] = field(default_factory=dict)
    metrics: dict[str, set] = field(default_factory=dict)
    extra: dict[str, set] = field(default_factory=dict)
    # the phases whose rows are stored in node and slot order (a phase's records are written
    # so: record_rows.py), read as stored by the second pass: SQLite's sort of a phase's rows
    # is ~a quarter of reading them
    in_order: set[Part] = field(default_factory=set)

    def add(self, other: Survey) -> None:
        for mine, theirs in ((self.params, other.params), (self.metrics, other.metrics),
                             (self.extra, other.extra)):
            for k, kinds in theirs.items():
                mine.setdefault(k, set()).update(kinds)


def _note(keys: dict[str, set], obj: dict) -> None:
    for k, v in obj.items():
        t = v.__class__
        seen = keys.get(k)
        if seen is None:
            if t in _SCALARS:       # a key of lists or tables only gets no column
                keys[k] = {t}
        elif t not in seen:
            seen.add(t if t in _SCALARS else type(None))   # its cell is empty there


def survey(con: sqlite3.Connection, path: str, phases: Sequence[Part]) -> Survey:
    """Every record's params, metrics and extra keys (pass 2 of the module docstring)."""
    s, dec = Survey(), _Decoder(path)
    for part in phases:
        # as stored first; a phase found out of order is surveyed again, sorted, for the
        # order its keys are first seen in
        got = _survey_phase(con, part, dec, ordered=False)
        if got is None:
            got = _survey_phase(con, part, dec, ordered=True)
        else:
            s.in_order.add(part)
        s.add(got)
    # a param absent from some phase's records is empty there
    for keys in (s.params, s.metrics, s.extra):
        for seen in keys.values():
            seen.add(type(None))
    return s


def _survey_phase(con: sqlite3.Connection, part: Part, dec: _Decoder, ordered: bool
                  ) -> Survey | None:
    """One phase's keys; None when read as stored (not `ordered`) they are not in node and
    slot order."""
    s, params, last = Survey(), set(), ("", -1)
    for batch in _phase_rows(con, part, "rec.node, rec.slot, rec.params, rec.metrics, "
                                        "rec.extra", ordered):
        for node, slot, ptext, mtext, xtext in batch:
            if not ordered:
                if (node, slot) < last:
                    return None
                last = (node, slot)
            if ptext not in params:     # a phase's records share their params
                params.add(ptext)
                _note(s.params, dec.param(ptext, part.run, part.phase, slot)[0])
            _note(s.metrics, dec.keys(mtext, "metrics", part.run, part.phase, slot))
            _note(s.extra, dec.keys(xtext, "extra", part.run, part.phase, slot))
    return s


class RecordTable:
    """The records' export columns and their rows, batch by batch (one pass each time
    rows() is iterated). nested: params, metrics and extra as objects, no flattened columns
    (JSON); else as compact JSON text with the flattened columns. typed: the survey runs for
    each column's types even when nested (Parquet)."""

    def __init__(self, con: sqlite3.Connection, path: str, run: str | None, nested: bool,
                 typed: bool = False, objects: bool = False) -> None:
        self.con, self.path, self.nested, self.objects = con, path, nested, objects
        self.parts = parts(con, run)
        s = survey(con, path, self.parts) if typed or not nested else Survey()
        self.in_order = s.in_order
        self.params = [] if nested else [k for k in s.params]
        self.metrics = [] if nested else [k for k in s.metrics]
        self.extra = [] if nested else [k for k in s.extra if k not in NOT_IN_EXTRA]
        self.columns = [*COLUMNS, *EXTRA_COLUMNS, *(PARAM + k for k in self.params),
                        *(METRIC + k for k in self.metrics), "extra",
                        *(EXTRA + k for k in self.extra)]
        obj = dict if objects else str
        none = type(None)
        self.kinds: list[set] = [
            *({_KINDS[c]} for c in COLUMNS[:_P]), {obj}, {obj},
            *({_KINDS[c]} for c in COLUMNS[_M + 1:]),
            s.extra.get(RANK, {int, none}), s.extra.get(STDOUT, {str}) | {str},
            s.extra.get(STDERR, {str}) | {str}, {str},
            *(s.params[k] for k in self.params), *(s.metrics[k] for k in self.metrics),
            {obj}, *(s.extra[k] for k in self.extra)]

    def rows(self) -> Iterator[list[list]]:
        """Batches of rows, each a list of values in `columns` order, of BATCH_ROWS rows
        or more (the phases' rows together: a run of 10,000 phases of 2 records is not
        20,000 row groups of 2 rows) but the last."""
        pending: list[list] = []
        for _, batch in self.batches():
            pending += batch
            if len(pending) >= BATCH_ROWS:
                yield pending
                pending = []
        if pending:
            yield pending

    def batches(self) -> Iterator[tuple[Part, list[list]]]:
        """rows() with the phase each batch belongs to (a batch holds one phase's rows)."""
        dec = _Decoder(self.path)
        for part in self.parts:
            for batch in _phase_rows(self.con, part, _SELECT, part not in self.in_order):
                yield part, [self._row(r, dec) for r in batch]

    def _row(self, r: tuple, dec: _Decoder) -> list:
        run, phase, slot = r[0], r[1], r[_SLOT]
        pobj, ptext = dec.param(r[_P], run, phase, slot)
        m = dec.obj(r[_M], "metrics", run, phase, slot)
        x = dec.obj(r[_X], "extra", run, phase, slot)
        extra = {k: v for k, v in x.items() if k not in NOT_IN_EXTRA}
        out = list(r)
        if self.objects:
            out[_P], out[_M] = pobj, m
        else:
            out[_P], out[_M] = ptext, _compact(m)
        missing = x.get(MISSING_METRICS)
        out[_X] = x.get(RANK)
        out += (x.get(STDOUT, ""), x.get(STDERR, ""),
                ";".join(map(str, missing)) if missing else "")
        # a value that is not a scalar (a list, a table) stays in its object only
        if not self.nested:
            out += [v if (v := pobj.get(k)).__class__ in _SCALARS else None
                    for k in self.params]
            out += [v if (v := m.get(k)).__class__ in _SCALARS else None for k in self.metrics]
        out.append(extra if self.objects else _compact(extra))
        if not self.nested:
            out += [v if (v := extra.get(k)).__class__ in _SCALARS else None
                    for k in self.extra]
        return out
