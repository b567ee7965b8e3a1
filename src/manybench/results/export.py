"""Export records as the contract's columns: exactly record.COLUMNS, in that order.

Adding a format is adding one function `(records, out) -> None` to EXPORTERS.
"""
from __future__ import annotations

import csv
import json
from typing import Callable, Iterable, TextIO

from ..record import COLUMNS, Record


def _compact(value: object) -> str:
    # default=str: an odd value in params must still export rather than fail the whole file
    return json.dumps(value, separators=(",", ":"), default=str)


def _csv(records: Iterable[Record], out: TextIO) -> None:
    """CSV with a header row; params and metrics as compact JSON strings."""
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in records:
        row = r.row()
        row["params"] = _compact(row["params"])
        row["metrics"] = _compact(row["metrics"])
        w.writerow([row[c] for c in COLUMNS])


def _json(records: Iterable[Record], out: TextIO) -> None:
    """A JSON array, one object per record, params and metrics as objects.

    Written one record per line as it goes, so a large run is never held as one string.
    """
    out.write("[")
    sep = "\n"
    for r in records:
        out.write(sep + json.dumps(r.row(), default=str))
        sep = ",\n"
    out.write("\n]\n")


EXPORTERS: dict[str, Callable[[Iterable[Record], TextIO], None]] = {"csv": _csv, "json": _json}
FORMATS = tuple(EXPORTERS)


def export(records: Iterable[Record], fmt: str, out: TextIO) -> None:
    """Write records to `out` in format `fmt` (one of FORMATS)."""
    try:
        writer = EXPORTERS[fmt]
    except KeyError:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}") from None
    writer(records, out)
