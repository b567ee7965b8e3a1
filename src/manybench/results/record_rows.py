"""A phase's records as rows of results.db's records table: what Store.write_phase inserts.

Each JSON column is encoded a column at a time (orjson, cut back into one text per record by
the C extension), a phase's params once, and a phase of SHARE_MIN_ROWS records or more has
the values every record shares (run, T0, the phase's) written into its INSERT once instead
of bound with each of its rows (64,000 at 1,000 nodes x 64 slots). Records given one by one
(made, or holding series) take the general path; both give the same rows
(tests/engines/test_simulated_records.py, tests/results/test_record_native.py).
"""
from __future__ import annotations

import json
import operator
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import orjson

from ..extra_keys import RANK, SERIES
from ..record import FIELDS, Record
from ..record_columns import SLOT_COLUMNS, RecordColumns

_REC_FIELDS = tuple(f.name for f in FIELDS)
_REC_JSON = tuple(f.name for f in FIELDS if f.metadata["json"])
_INSERT_RECORD = (f"INSERT INTO records ({', '.join(_REC_FIELDS)}) "
                  f"VALUES ({', '.join('?' * len(_REC_FIELDS))})")


def dumps(value: Any) -> str:
    # default=str: a stray Path or Decimal in params must not lose a phase at commit time
    return json.dumps(value, separators=(",", ":"), default=str)


def json_encoder(item_sep: str = ",", key_sep: str = ":") -> Callable[[Any], str]:
    """json.dumps(value, separators=(item_sep, key_sep), default=str), made once: json.dumps
    builds its encoder at every call, which costs as much as the encoding of a record's
    small objects (a phase's records here, every record of an export)."""
    from json import encoder   # noqa: PLC0415
    make = encoder.c_make_encoder
    if make is None:      # a Python without json's C speedups
        return lambda value: json.dumps(value, separators=(item_sep, key_sep), default=str)
    enc = make(None, str, encoder.encode_basestring_ascii, None, key_sep, item_sep, False,
               False, True)
    return lambda value: "".join(enc(value, 0))


_dumps_fast = json_encoder()
_ORJSON_OPTS = orjson.OPT_NON_STR_KEYS
try:     # plan checks, dry runs and readers work without the C extension (kernels/native.py)
    from .._native import json_items as _json_items
except ImportError:
    _json_items = None
_orjson_dumps = orjson.dumps


def _dumps_each(values: list) -> list[str]:
    """dumps of each of a phase's dicts (records' metrics, extra: 64,000 at 1,000 nodes x 64
    slots). orjson encodes one in ~0.3 us where json takes ~1.5, and the whole column in one
    call for a fifth of that again; the C extension cuts its text back into one value per
    record (_native.json_items; without it, a call per value). A value orjson writes
    otherwise than json reads back (a NaN or an infinity as null) or cannot write (an int
    past 64 bits) goes to json: the same texts either way (tests/results/test_record_native.py)."""
    if _json_items is not None and values:
        try:
            text = _orjson_dumps(values, str, _ORJSON_OPTS)
        except (TypeError, ValueError):      # one value orjson refuses: each on its own
            return [_dumps_one(v) for v in values]
        items = _json_items(text)     # None: its text holds "null"
        if None in items:
            return [dumps(v) if t is None else t for v, t in zip(values, items)]
        return items
    # one pass, each text decoded as made: a list of the encoded bytes kept whole first
    # cost 5x as much here
    return [_dumps_one(v) for v in values]


def _dumps_one(value: Any) -> str:
    try:
        text = _orjson_dumps(value, str, _ORJSON_OPTS)
    except (TypeError, ValueError):      # orjson.JSONEncodeError is a TypeError
        return dumps(value)
    return dumps(value) if b"null" in text else text.decode()


_GET_RECORD = operator.attrgetter(*_REC_FIELDS)       # a record's columns, in one call
_JSON_AT = tuple(_REC_FIELDS.index(f) for f in _REC_JSON if f != "params")
_PARAMS_AT, _HIST_AT = _REC_FIELDS.index("params"), _REC_FIELDS.index("hist")
_EXTRA_AT = _REC_FIELDS.index("extra")
# a record's own JSON columns (its params, its phase's, are encoded once: _column_rows)
_SLOT_JSON = tuple(name for name in _REC_JSON if name in SLOT_COLUMNS)


def phase_rows(run_id: str, phase_index: int, records: Sequence[Record]
               ) -> tuple[str, Iterable[Any], list[tuple]]:
    """The insert of a phase's records, its rows, and the series rows their extras held."""
    insert, xrows = _column_rows(records), []
    if insert is not None:
        return insert[0], insert[1], xrows
    rows = _record_rows(records)              # Records one by one
    for r, row in zip(records, rows):
        if SERIES in (r.extra or {}):   # kept as rows of their own, not in extra
            row[_EXTRA_AT] = {k: v for k, v in r.extra.items() if k != SERIES}
            xrows += _series_rows(run_id, phase_index, r)
    _encode_rows(rows)
    return _INSERT_RECORD, rows, xrows


def _hist_out(hist: dict[int, int] | None) -> str | None:
    return None if hist is None else dumps({str(k): v for k, v in hist.items()})


def _series_rows(run_id: str, phase_index: int, r: Record) -> list[tuple]:
    """A record's extra["series"] (parsers' Series.to_json()) as series rows."""
    rank = r.extra.get(RANK)
    return [(run_id, phase_index, r.node, r.slot, rank, str(s["name"]), float(x), float(y),
             str(s.get("unit", "")), str(s.get("x_unit", "bytes")))
            for s in r.extra.get(SERIES) or () for x, y in s.get("points", ())]


def _column_rows(records: Sequence[Record]) -> tuple[str, Iterator[tuple]] | None:
    """A phase's insert from its columns (record_columns.py), each JSON column encoded in one
    call: the statement, with the values every record shares in it (_insert_sharing), and
    the rows of the others, as one pass for executemany (a list of 64,000 rows costs its own
    time); None when the records are to be taken one by one (made, or holding series)."""
    if not isinstance(records, RecordColumns) or records.built_records is not None or records.series:
        return None
    # a phase's records share their params (one object): each object encoded once, by its
    # identity (a dict is not hashable). The memo holds the object it keys, so no id in it
    # can be reused by another object while it lives.
    params: dict[int, tuple[dict, str]] = {}
    ptexts = []
    for p in records.column("params"):
        got = params.get(id(p))
        if got is None:
            got = params[id(p)] = (p, _dumps_fast(p))
        ptexts.append(got[1])
    share = len(records) >= SHARE_MIN_ROWS
    encoded = {name: _dumps_each(records.column(name)) for name in _SLOT_JSON}
    encoded["params"] = ptexts
    encoded["hist"] = [None if h is None else _hist_out(h) for h in records.hist]
    got = records.rows(encoded, share)
    if got is None:
        return None
    shared, rows = got
    sql = _insert_sharing(shared) if share else _INSERT_RECORD
    return (sql, rows) if sql else (_INSERT_RECORD, _full_rows(rows, shared))


# a phase's shared values go into its insert from this many records: the statement is then
# new at every phase, and preparing it (~20 us) costs more than binding them to fewer rows
# (a local phase of 2 slots)
SHARE_MIN_ROWS = 256
_SQL_INT = range(-2**63 + 1, 2**63)


def _sql_literal(value: Any) -> str | None:
    """value as an SQL literal SQLite stores exactly as it would the value bound (None, an
    int of 64 bits, a str of no NUL that UTF-8 can encode); None for any other."""
    if value is None:
        return "NULL"
    if type(value) is int and value in _SQL_INT:
        return str(value)
    if isinstance(value, str) and "\x00" not in value:
        value = str(value)      # a str enum's member (status.py): its text
        try:
            value.encode()
        except UnicodeEncodeError:
            return None
        return "'" + value.replace("'", "''") + "'"
    return None


def _insert_sharing(shared: Mapping[str, Any]) -> str | None:
    """The insert of records with the values every one shares (64,000 rows at 1,000 nodes x
    64 slots: run, T0, the phase's, and their own values that are one for all: status ok,
    no error...) written into the statement once instead of bound per row (~10% of SQLite's
    insert); None when one of them cannot be written in SQL."""
    values = []
    for name in _REC_FIELDS:
        text = _sql_literal(shared[name]) if name in shared else "?"
        if text is None:
            return None
        values.append(text)
    return (f"INSERT INTO records ({', '.join(_REC_FIELDS)}) "
            f"VALUES ({', '.join(values)})")


def _full_rows(rows: Iterator[tuple], shared: Mapping[str, Any]) -> Iterator[tuple]:
    """Rows of the unshared values with the shared ones put back, in field order (the rare
    phase whose shared values cannot all be written in SQL: bound with every row)."""
    plan = [(name in shared, shared.get(name)) for name in _REC_FIELDS]
    for row in rows:
        own = iter(row)
        yield tuple(value if fixed else next(own) for fixed, value in plan)


def _record_rows(records: Iterable[Record]) -> list[list]:
    """Rows of Records (JSON columns still to encode: _encode_rows)."""
    return [list(_GET_RECORD(r)) for r in records]


def _encode_rows(rows: list[list]) -> None:
    """The JSON columns of Records' rows encoded, a column at a time (_dumps_each)."""
    for at in _JSON_AT:
        for row, text in zip(rows, _dumps_each([row[at] for row in rows])):
            row[at] = text
    # each params object encoded once, as _column_rows does: the memo holds it, so its id is
    # not reused while the memo lives (replaced by its text, a row may drop the last reference)
    params: dict[int, tuple[dict, str]] = {}
    for row in rows:
        p = row[_PARAMS_AT]
        got = params.get(id(p))
        if got is None:
            got = params[id(p)] = (p, _dumps_fast(p))
        row[_PARAMS_AT] = got[1]
        if row[_HIST_AT] is not None:
            row[_HIST_AT] = _hist_out(row[_HIST_AT])
