"""`manybench export`: one table of a results directory to a file or stdout."""
from __future__ import annotations

import sys

from ..outfile import replacing
from ..record import COLUMNS
from .export import ExportError, write
from .frames import PHASE_COLUMNS, table_rows
from .store import Store

_FIRST = {"records": COLUMNS, "phases": PHASE_COLUMNS}


def export_table(store: Store, table: str, fmt: str, out: str | None, run: str | None,
                 nested: bool) -> str:
    """Write the table; "" when done, else the message of why not (exit 2)."""
    if run is not None:
        try:
            store.run(run)
        except KeyError as e:
            return str(e.args[0])
    # JSON keeps objects as objects: flattening is for columnar formats
    rows = table_rows(store, table, run, nested or fmt == "json")
    first = _FIRST.get(table, ())
    try:
        if out:      # whole or not at all: a failure leaves the file that was there
            with replacing(out, binary=fmt == "parquet", newline="") as f:
                write(rows, fmt, f, first)
        else:
            write(rows, fmt, sys.stdout, first)
    except ExportError as e:
        return str(e)
    return ""
