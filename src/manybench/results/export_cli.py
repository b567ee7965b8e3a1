"""`manybench export`: one table of a results directory to a file or stdout; the records
table streamed (record_stream.py), or as a Parquet dataset of a file per run and phase."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import IO

from ..outfile import replacing
from ..record import COLUMNS
from .export import KEEPS_OBJECTS, ExportError, Table, check, exporter, write, write_partitioned
from .flat_stream import FLAT, flat_table
from .frames import PHASE_COLUMNS, table_rows
from .record_stream import RecordTable
from .store import Store

_FIRST = {"records": COLUMNS, "phases": PHASE_COLUMNS}


def export_table(store: Store, table: str, fmt: str, out: str | None, run: str | None,
                 nested: bool, partition: bool = False) -> str:
    """Write the table; "" when done, else the message of why not (exit 2)."""
    if run is not None:
        try:
            store.run(run)
        except KeyError as e:
            return str(e.args[0])
    if partition and (fmt != "parquet" or table != "records" or not out):
        return ("--partition writes the records as a Parquet dataset into a new directory: "
                "it needs --format parquet, --table records and -o DIR")
    try:
        check(fmt)
        if partition:
            return _partitioned(store, run, nested, out)
        if out:      # whole or not at all: a failure leaves the file that was there
            with replacing(out, binary=fmt == "parquet", newline="") as f:
                _write(store, table, fmt, f, run, nested)
        else:
            _write(store, table, fmt, sys.stdout, run, nested)
    except ExportError as e:
        return str(e)
    return ""


def _write(store: Store, table: str, fmt: str, f: IO, run: str | None, nested: bool) -> None:
    # JSON keeps objects as objects: flattening is for columnar formats
    objects = fmt in KEEPS_OBJECTS
    if table in FLAT:            # as many rows as records, or more: streamed too
        with store.snapshot() as con:
            exporter(fmt)(flat_table(con, table, run), f)
        return
    if table != "records":       # phases, nodes: O(phases x nodes) rows, held
        write(table_rows(store, table, run, nested or objects), fmt, f, _FIRST.get(table, ()))
        return
    with store.snapshot() as con:
        t = RecordTable(con, store.path, run, nested or objects, fmt == "parquet", objects)
        exporter(fmt)(Table(t.columns, t.kinds, t.rows()), f)


def _partitioned(store: Store, run: str | None, nested: bool, out: str) -> str:
    """The dataset made in a directory beside `out`, renamed to it when whole."""
    if os.path.lexists(out):
        return f"-o {out}: exists; --partition writes a new directory"
    tmp = tempfile.mkdtemp(prefix=os.path.basename(out) + ".", dir=os.path.dirname(out) or ".")
    try:
        with store.snapshot() as con:
            t = RecordTable(con, store.path, run, nested, True)
            write_partitioned(Table(t.columns, t.kinds, ()), t.batches(), tmp)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ""
