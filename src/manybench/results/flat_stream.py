"""The samples, series and telemetry tables as export's rows, a batch at a time (issue 30):
rows of fixed columns (their contract dataclass's fields, in its order), read from one
snapshot of the file, in memory that does not grow with the rows. A run with progress
samples on every slot holds far more of them than records.

The rows, their order and their values are frames.table_rows' (Store.samples, .series,
.telemetry run after run, oldest first); the types each column holds, which a Parquet
schema needs before its first row, are SQLite's own (typeof), in one pass before the rows."""
from __future__ import annotations

import sqlite3
from dataclasses import fields
from typing import Iterator

from ..node.wire_types import TelemetryRow
from .contract import Sample, SeriesPoint
from .export import BATCH_ROWS, Table

# table -> (its rows' dataclass, the order Store gives them in)
FLAT = {"samples": (Sample, "phase, rank, t_s"),
        "series": (SeriesPoint, "phase, node, slot, name, x"),
        "telemetry": (TelemetryRow, "t_ns, node")}
_TYPES = {"integer": int, "real": float, "text": str, "null": type(None), "blob": bytes}


def _columns(table: str) -> tuple[list[str], list[str]]:
    """The dataclass's field names, and the stored columns holding them (phase_id is
    `phase`)."""
    names = [f.name for f in fields(FLAT[table][0])]
    return names, ["phase" if n == "phase_id" else n for n in names]


def flat_table(con: sqlite3.Connection, table: str, run: str | None) -> Table:
    """`table`'s rows of `run` (of every run, oldest first, when None), to be written while
    `con` holds its snapshot (Store.snapshot)."""
    names, stored = _columns(table)
    runs = [run] if run is not None else [r for (r,) in con.execute(
        "SELECT id FROM runs ORDER BY started_ns, rowid")]
    kinds: list[set] = [set() for _ in names]
    typeofs = ", ".join(f"typeof({c})" for c in stored)
    marks = ",".join("?" * len(runs))
    for combo in con.execute(f"SELECT DISTINCT {typeofs} FROM {table} WHERE run IN ({marks})",
                             runs):
        for seen, t in zip(kinds, combo):
            seen.add(_TYPES[t])
    return Table(names, kinds, _batches(con, table, ", ".join(stored), runs))


def _batches(con: sqlite3.Connection, table: str, select: str, runs: list[str]
             ) -> Iterator[list[list]]:
    order = FLAT[table][1]
    for run in runs:
        cur = con.execute(f"SELECT {select} FROM {table} WHERE run=? ORDER BY {order}", (run,))
        while batch := cur.fetchmany(BATCH_ROWS):
            yield [list(row) for row in batch]
