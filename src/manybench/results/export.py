"""Export rows as CSV, JSON, JSON lines or Parquet. Records exported with `export` are the
contract's columns, exactly record.COLUMNS in that order; `write` takes any table's rows
(frames.py: records with their extra and flattened columns, phases, samples, telemetry,
nodes); `manybench export` streams the records table (record_stream.RecordTable).

Every writer writes a Table's rows a batch at a time as they come, so what it holds is one
batch, whatever the table's size (issue 30). Adding a format is adding one function
`(table, out) -> None` to EXPORTERS.
"""
from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterable, Sequence
from urllib.parse import quote

from ..record import COLUMNS, Record
from .record_rows import json_encoder


class ExportError(Exception):
    """An export this installation cannot write; the message says what to install."""


# default=str: an odd value in params must still export rather than fail the whole file
_compact = json_encoder()
_json_row = json_encoder(", ", ": ")      # json.dumps(row, default=str), as export wrote it


@dataclass
class Table:
    """Rows to export: `kinds[i]` holds the types column i's values take (type(None) for an
    empty cell) over every row, known before the first is written (a Parquet schema);
    `batches` yields lists of rows, each a list of values in `columns` order, once."""
    columns: list[str]
    kinds: list[set]
    batches: Iterable[list[list]]


# a text cell beginning with one of these is a formula to a spreadsheet (OWASP's list):
# `=cmd|' /C calc'!A0` in a task's name or a command's output would run when opened
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell a spreadsheet takes as it is: dicts and lists as compact JSON,
    text that would start a formula with a leading single quote (OWASP: shown and kept as
    text); numbers stay numbers (-3 is -3, not text)."""
    t = type(value)
    if t is str:
        return "'" + value if value.startswith(FORMULA_START) else value
    if t is dict or t is list or t is tuple:
        return _compact(value)      # begins with { or [
    if isinstance(value, str):      # a subclass (an enum's value)
        return csv_cell(str(value))
    return value


class _Lines:
    """csv.writer's rows kept in a list, one per write: the writer is told they end "\r\n"
    so that it quotes every cell holding a character of its line end (a carriage return
    inside a cell, where a spreadsheet starts a new row, and maybe a formula); _flush writes
    them ended by "\n" as before."""

    def __init__(self, lines: list[str]) -> None:
        self.write = lines.append


def _flush(lines: list[str], out: IO) -> None:
    if lines:
        out.write("".join([line[:-2] + "\n" for line in lines]))
        lines.clear()


# a formula's start at a cell's start, in a column's cells each begun by a NUL
_FORMULA_AFTER_NUL = re.compile("\x00[" + re.escape("".join(FORMULA_START)) + "]")


def _cells(batch: list[list], text: list[int]) -> None:
    """csv_cell of every cell of the columns that may hold text; a column of text none of
    whose cells starts a formula (the common case) is left as it is, found by a search of
    its cells joined (a NUL inside a cell only sends it the slow way)."""
    for i in text:
        try:
            joined = "\x00" + "\x00".join([row[i] for row in batch])
        except TypeError:       # not all text: each cell
            joined = "\x00="
        if _FORMULA_AFTER_NUL.search(joined):
            for row in batch:
                row[i] = csv_cell(row[i])


def _csv(table: Table, out: IO) -> None:
    """CSV with a header row, each cell that may hold text a csv_cell (no formula a
    spreadsheet would run)."""
    lines: list[str] = []
    w = csv.writer(_Lines(lines), lineterminator="\r\n")
    w.writerow([csv_cell(c) for c in table.columns])
    text = [i for i, k in enumerate(table.kinds) if not k <= _NUMBERS]
    for batch in table.batches:
        _cells(batch, text)
        w.writerows(batch)
        _flush(lines, out)
    _flush(lines, out)


def _json(table: Table, out: IO) -> None:
    """A JSON array, one object per row, dicts as objects, one row per line as it goes."""
    out.write("[")
    sep, columns = "\n", table.columns
    for batch in table.batches:
        if batch:
            out.write(sep + ",\n".join(_json_row(dict(zip(columns, r))) for r in batch))
            sep = ",\n"
    out.write("\n]\n")


def _jsonl(table: Table, out: IO) -> None:
    """JSON lines: one object per row and line (what `json` writes, without the array)."""
    columns = table.columns
    for batch in table.batches:
        out.write("".join(_json_row(dict(zip(columns, r))) + "\n" for r in batch))


# what a plain install leaves out (pyproject.toml's `parquet` extra says why), and the way in
PARQUET = ("pip install pyarrow, or install manybench with its parquet extra ('.[parquet]' "
           "from its source tree, 'manybench[parquet]' from a bundle made with --extra parquet)")


def _pyarrow() -> Any:
    try:
        import pyarrow  # noqa: PLC0415
        import pyarrow.parquet  # noqa: F401, PLC0415
    except ImportError:
        raise ExportError(f"--format parquet needs pyarrow, which is not installed: {PARQUET}; "
                          "csv and json need nothing more") from None
    return pyarrow


def check(fmt: str) -> None:
    """ExportError when this installation cannot write `fmt`, before any row is read."""
    if fmt == "parquet":
        _pyarrow()


_NONE = type(None)
_NUMBERS = frozenset({int, float, bool, _NONE})


def _arrow_type(pa: Any, kinds: set) -> tuple[Any, bool]:
    """A column's Parquet type from the types of its values, and whether its values are
    written as text: dicts and lists as compact JSON; a column whose values mix types no one
    Parquet type holds (text and numbers, true/false and numbers) as text, each its str()."""
    k = {str if t in (dict, list, tuple) else t for t in kinds} - {_NONE}
    if not k:
        return pa.null(), False
    if k == {bool}:
        return pa.bool_(), False
    if k == {int}:
        return pa.int64(), False
    if k <= {int, float}:
        return pa.float64(), False
    return pa.string(), k != {str} or bool(kinds & {dict, list, tuple})


def _text(v: Any) -> Any:
    if v is None or v.__class__ is str:
        return v
    return _compact(v) if isinstance(v, (dict, list, tuple)) else str(v)


def _arrow_batch(pa: Any, schema: Any, text: list[bool], batch: list[list]) -> Any:
    cols = []
    for i, values in enumerate(zip(*batch)):
        field = schema.field(i)
        try:
            cols.append(pa.array([_text(v) for v in values] if text[i] else values,
                                 type=field.type))
        except (pa.ArrowException, OverflowError, TypeError) as e:
            raise ExportError(f"column {field.name} cannot be written as {field.type}: "
                              f"{e}") from None
    return pa.RecordBatch.from_arrays(cols, schema=schema)


class _Parquet:
    """A table's Parquet schema (one for every file of a partitioned export) and its batches
    as Arrow record batches; each batch is a row group."""

    def __init__(self, table: Table) -> None:
        self.pa = _pyarrow()
        types = [_arrow_type(self.pa, k) for k in table.kinds]
        self.schema = self.pa.schema([self.pa.field(c, t) for c, (t, _) in
                                      zip(table.columns, types)])
        self.text = [x for _, x in types]

    def writer(self, out: Any) -> Any:
        return self.pa.parquet.ParquetWriter(out, self.schema)

    def batch(self, rows: list[list]) -> Any:
        return _arrow_batch(self.pa, self.schema, self.text, rows)


def _parquet(table: Table, out: IO) -> None:
    """Apache Parquet (pyarrow), a row group per batch; dicts and lists as compact JSON."""
    pq = _Parquet(table)
    with pq.writer(getattr(out, "buffer", out)) as w:
        for batch in table.batches:
            if batch:
                w.write_batch(pq.batch(batch))


def write_partitioned(table: Table, parts: Iterable[tuple[Any, list[list]]],
                      directory: str) -> int:
    """The records as a Parquet dataset: directory/<run>/phase-<index>.parquet, one file per
    run and phase, each with every column (run and phase too) and one schema for all, so
    pandas.read_parquet, dask.dataframe.read_parquet and DuckDB's read_parquet read the
    directory (DuckDB: 'DIR/*/*.parquet') as the one table `--format parquet` writes.
    parts: (part, batch) with part.run and part.phase, a part's batches together. The number
    of files written."""
    pq = _Parquet(table)
    files, current, w = 0, None, None
    try:
        for part, batch in parts:
            if (part.run, part.phase) != current:
                if w is not None:
                    w.close()
                current = (part.run, part.phase)
                d = os.path.join(directory, quote(part.run, safe=""))
                os.makedirs(d, exist_ok=True)
                w = pq.writer(os.path.join(d, f"phase-{part.phase:06d}.parquet"))
                files += 1
            w.write_batch(pq.batch(batch))
    finally:
        if w is not None:
            w.close()
    return files


EXPORTERS: dict[str, Callable[[Table, IO], None]] = {
    "csv": _csv, "json": _json, "jsonl": _jsonl, "parquet": _parquet}
FORMATS = tuple(EXPORTERS)
# formats that keep params, metrics, extra (any dict) as objects, with no flattened columns
KEEPS_OBJECTS = frozenset({"json", "jsonl"})


def columns_of(rows: list[dict], first: Sequence[str] = ()) -> list[str]:
    """`first`, then every other key of the rows in the order first seen."""
    return list(dict.fromkeys([*first, *(k for r in rows for k in r)]))


def kinds_of(rows: list[list], width: int) -> list[set]:
    """The types each of `width` columns' values take over the rows."""
    kinds: list[set] = [set() for _ in range(width)]
    for row in rows:
        for seen, v in zip(kinds, row):
            seen.add(v.__class__)
    return kinds


def exporter(fmt: str) -> Callable[[Table, IO], None]:
    try:
        return EXPORTERS[fmt]
    except KeyError:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}") from None


# rows per batch (a Parquet row group): ~10 MB of Python objects at the records' ~35 columns
BATCH_ROWS = 8_192


def write(rows: list[dict], fmt: str, out: IO, first: Sequence[str] = ()) -> None:
    """Write rows to `out` in format `fmt` (one of FORMATS); columns: `first`, then the rest
    of the rows' keys."""
    writer = exporter(fmt)
    columns = columns_of(rows, first)
    values = [[r.get(c) for c in columns] for r in rows]
    writer(Table(columns, kinds_of(values, len(columns)),
                 (values[i:i + BATCH_ROWS] for i in range(0, len(values), BATCH_ROWS))), out)


def export(records: Iterable[Record], fmt: str, out: IO) -> None:
    """Write records to `out` in format `fmt` (one of FORMATS), the contract's columns."""
    write([r.row() for r in records], fmt, out, COLUMNS)
