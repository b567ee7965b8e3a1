"""Export rows as CSV, JSON or Parquet. Records exported with `export` are the contract's
columns, exactly record.COLUMNS in that order; `write` takes any table's rows (frames.py:
records with their extra and flattened columns, phases, samples, telemetry, nodes).

Adding a format is adding one function `(rows, columns, out) -> None` to EXPORTERS.
"""
from __future__ import annotations

import csv
import json
from typing import IO, Any, Callable, Iterable, Sequence

from ..record import COLUMNS, Record


class ExportError(Exception):
    """An export this installation cannot write; the message says what to install."""


def _compact(value: object) -> str:
    # default=str: an odd value in params must still export rather than fail the whole file
    return json.dumps(value, separators=(",", ":"), default=str)


def _cell(v: Any) -> Any:
    return _compact(v) if isinstance(v, (dict, list, tuple)) else v


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


class _LineFeed:
    """csv.writer's rows ended by "\n" as before, from a writer told they end "\r\n": it
    quotes every cell holding a character of its line end, so a carriage return inside a
    cell (where a spreadsheet starts a new row, and maybe a formula) is quoted."""

    def __init__(self, out: IO) -> None:
        self.out = out

    def write(self, line: str) -> Any:
        return self.out.write(line[:-2] + "\n")     # one row per call, ended "\r\n"


def _csv(rows: Iterable[dict], columns: Sequence[str], out: IO) -> None:
    """CSV with a header row, each cell a csv_cell (no formula a spreadsheet would run)."""
    w = csv.writer(_LineFeed(out), lineterminator="\r\n")
    w.writerow([csv_cell(c) for c in columns])
    for row in rows:
        w.writerow([csv_cell(row.get(c)) for c in columns])


def _json(rows: Iterable[dict], columns: Sequence[str], out: IO) -> None:
    """A JSON array, one object per row, dicts as objects.

    Written one row per line as it goes, so a large run is never held as one string.
    """
    out.write("[")
    sep = "\n"
    for row in rows:
        out.write(sep + json.dumps({c: row.get(c) for c in columns}, default=str))
        sep = ",\n"
    out.write("\n]\n")


# what a plain install leaves out (pyproject.toml's `parquet` extra says why), and the way in
PARQUET = ("pip install pyarrow, or install manybench with its parquet extra ('.[parquet]' "
           "from its source tree, 'manybench[parquet]' from a bundle made with --extra parquet)")


def _parquet(rows: Iterable[dict], columns: Sequence[str], out: IO) -> None:
    """Apache Parquet (pyarrow); dicts and lists as compact JSON strings."""
    try:
        import pyarrow  # noqa: F401, PLC0415
    except ImportError:
        raise ExportError(f"--format parquet needs pyarrow, which is not installed: {PARQUET}; "
                          "csv and json need nothing more") from None
    import pandas as pd   # noqa: PLC0415
    df = pd.DataFrame([{c: _cell(r.get(c)) for c in columns} for r in rows],
                      columns=list(columns))
    for c in df.columns[df.dtypes == object]:
        # a column of text and numbers (an extra.* key two kernels keep differently) has no
        # Parquet type: its values are written as text rather than the export failing
        if len({isinstance(v, str) for v in df[c].dropna()}) > 1:
            df[c] = [None if pd.isna(v) else str(v) for v in df[c]]
    df.to_parquet(getattr(out, "buffer", out), index=False)


EXPORTERS: dict[str, Callable[[Iterable[dict], Sequence[str], IO], None]] = {
    "csv": _csv, "json": _json, "parquet": _parquet}
FORMATS = tuple(EXPORTERS)


def columns_of(rows: list[dict], first: Sequence[str] = ()) -> list[str]:
    """`first`, then every other key of the rows in the order first seen."""
    return list(dict.fromkeys([*first, *(k for r in rows for k in r)]))


def write(rows: list[dict], fmt: str, out: IO, first: Sequence[str] = ()) -> None:
    """Write rows to `out` in format `fmt` (one of FORMATS); columns: `first`, then the rest
    of the rows' keys."""
    try:
        writer = EXPORTERS[fmt]
    except KeyError:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}") from None
    writer(rows, columns_of(rows, first), out)


def export(records: Iterable[Record], fmt: str, out: IO) -> None:
    """Write records to `out` in format `fmt` (one of FORMATS), the contract's columns."""
    write([r.row() for r in records], fmt, out, COLUMNS)
