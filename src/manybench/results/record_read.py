"""Rows of results.db's records table back into Records: what Store.records and
Store.phase_records return (record_rows.py makes the rows).

A phase's records share their params: one text, decoded once. A pass a phase at a time
(phases) holds one phase's rows and records, not the run's: at 1,000 nodes x 64 slots the
whole of a 100-phase run is 6.4 million records, ~15 GB as Records (docs/scale.md).
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import orjson

from ..record import FIELD_NAMES, FIELDS, Record, from_values
from .schema import DamagedError

COLUMNS = ", ".join(f"rec.{f}" for f in FIELD_NAMES)     # a row's columns, in Record's order
_JSON_AT = tuple(i for i, f in enumerate(FIELDS) if f.metadata["json"])
_PARAMS_AT, _HIST_AT = FIELD_NAMES.index("params"), FIELD_NAMES.index("hist")
_PHASE_AT = FIELD_NAMES.index("phase")
_SLOT_AT = FIELD_NAMES.index("slot")
# text columns with few values (SQLite makes a new string for every row's): one each
_SHARED_AT = tuple(FIELD_NAMES.index(f) for f in ("run", "task", "kernel", "node", "status"))
CHUNK_ROWS = 4_000      # rows read per query of a pass a phase at a time

_decode = json.JSONDecoder().decode
# orjson keeps integers exact from -2**63 to 2**64 - 1 and makes floats of the rest: a
# float outside that range may have been an integer, and its text is read by json
_EXACT = (-2.0**63, 2.0**64)


def loads(text: str) -> Any:
    # reading a large run decodes several objects per record: the parser skipped for the
    # common empty object, orjson (half json's time) for a flat object whose values it reads
    # as json does; json for the rest (NaN and infinities, which orjson refuses; nesting)
    if text == "{}":
        return {}
    try:
        got = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _decode(text)
    if type(got) is not dict:
        return _decode(text)
    lo, hi = _EXACT
    for v in got.values():
        kind = type(v)
        if kind is dict or kind is list or (kind is float and not lo < v < hi):
            return _decode(text)
    return got


def _hist_in(text: str | None) -> dict[int, int] | None:
    # JSON object keys are strings; the histogram's buckets are ints
    return None if text is None else {int(k): v for k, v in loads(text).items()}


class RecordReader:
    """Rows (COLUMNS) into Records; path: the file, named when a row is damaged."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.params_of: dict[str, dict] = {}
        self.strings: dict[str, str] = {}

    def record(self, row: tuple) -> Record:
        r = list(row)
        shared = self.strings.setdefault
        for i in _SHARED_AT:     # ~290 of ~1,340 bytes a record held
            r[i] = shared(r[i], r[i])
        f = ""
        try:
            for i in _JSON_AT:
                f = FIELD_NAMES[i]
                text = r[i]
                if i == _PARAMS_AT:
                    got = self.params_of.get(text)
                    if got is None:
                        got = self.params_of[text] = loads(text)
                else:
                    got = loads(text)
                if type(got) is not dict:
                    raise TypeError(f"a {type(got).__name__}, not an object")
                r[i] = got
            f = "hist"
            r[_HIST_AT] = _hist_in(r[_HIST_AT])
        except (ValueError, TypeError, AttributeError) as e:
            raise damaged(self.path, f, r[0], r[1], r[_SLOT_AT], e) from None
        return from_values(*r)


def damaged(path: str, column: str, run: str, phase: int, slot: int, e: Exception
            ) -> DamagedError:
    """A record whose JSON column does not decode to an object: what every reader says."""
    return DamagedError(f"{path} is damaged: bad JSON in records.{column} of run {run} phase "
                        f"{phase} slot {slot} ({type(e).__name__}: {e})")


class Scattered(Exception):
    """A phase's rows are not together in the file (none this manybench writes)."""


def phases(fetch: Callable[[int], list[tuple]], reader: RecordReader
           ) -> Iterator[tuple[int, list[Record]]]:
    """(phase index, its records ordered by node and slot), phase after phase as stored.
    fetch(after): the next CHUNK_ROWS rows of the run in storage order, each row's rowid
    last, after that rowid. A phase's rows are stored together (one INSERT, a stored phase
    deleted first when it is stored again): rows of a phase already given raise Scattered."""
    done: set[int] = set()
    current: int | None = None
    records: list[Record] = []
    after = 0
    while True:
        chunk = fetch(after)
        for row in chunk:
            idx = row[_PHASE_AT]
            if idx != current:
                if current is not None:
                    yield current, _ordered(records)
                    done.add(current)
                if idx in done:
                    raise Scattered(f"records of phase {idx} are stored apart")
                current, records = idx, []
            records.append(reader.record(row[:-1]))
        if len(chunk) < CHUNK_ROWS:
            break
        after = chunk[-1][-1]
        del chunk           # its rows are records now
    if current is not None:
        yield current, _ordered(records)


def _ordered(records: list[Record]) -> list[Record]:
    records.sort(key=lambda r: (r.node, r.slot))
    return records
