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


def _csv(rows: Iterable[dict], columns: Sequence[str], out: IO) -> None:
    """CSV with a header row; dicts and lists (params, metrics) as compact JSON strings."""
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([_cell(row.get(c)) for c in columns])


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


def _parquet(rows: Iterable[dict], columns: Sequence[str], out: IO) -> None:
    """Apache Parquet (pyarrow); dicts and lists as compact JSON strings."""
    try:
        import pyarrow  # noqa: F401, PLC0415
    except ImportError:
        raise ExportError("--format parquet needs pyarrow, which is not installed: "
                          "pip install pyarrow (or manybench[test])") from None
    import pandas as pd   # noqa: PLC0415
    df = pd.DataFrame([{c: _cell(r.get(c)) for c in columns} for r in rows],
                      columns=list(columns))
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
