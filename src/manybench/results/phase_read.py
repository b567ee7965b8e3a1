"""A results file's phases and their records read on a connection (Store's readers, and
the schema 9 migration's aggregation of phases stored before it: schema.upgrade's fill,
kept here so that the schema module reads no records), and the one decode of a JSON column
that names the damaged row."""
from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import Any, Iterator

from ..record import Record
from . import aggregate_rows, record_read
from .contract import PhaseTimes, StoredPhase
from .schema import DamagedError


def column(path: str, table: str, column: str, row: str, decode: Any, text: Any,
            kind: type = dict) -> Any:
    """A stored JSON column decoded, or DamagedError naming the file, table, column and row
    (a reader must not fail deep inside a report, nor show a row it cannot read)."""
    try:
        value = decode(text)
    except (ValueError, TypeError, AttributeError) as e:
        raise DamagedError(f"{path} is damaged: bad JSON in {table}.{column} of {row} "
                           f"({type(e).__name__}: {e})") from None
    if value is not None and not isinstance(value, kind):
        raise DamagedError(f"{path} is damaged: {table}.{column} of {row} holds a "
                           f"{type(value).__name__}, not a JSON {kind.__name__}")
    return value


def phases_of(db: sqlite3.Connection, path: str, run_id: str) -> list[StoredPhase]:
    """A run's stored phases in index order (Store.phases; the migration's too)."""
    cur = db.execute("SELECT * FROM phases WHERE run=? ORDER BY idx", (run_id,))
    names = [c[0] for c in cur.description]
    rows = [dict(zip(names, row)) for row in cur.fetchall()]
    return [StoredPhase(run=r["run"], index=r["idx"], task=r["task"], kernel=r["kernel"],
                        variant=r["variant"], rep=r["rep"], workers=r["workers"],
                        point=r["point"], t0_ns=r["t0_ns"],
                        params=column(path, "phases", "params", f"phase {r['idx']}",
                                       json.loads, r["params"]),
                        status=r["status"], label=r["label"],
                        warmup=bool(r["warmup"]), go_ns=r.get("go_ns"),
                        times=PhaseTimes(r.get("prepare_s"), r.get("prepare_node"),
                                         r.get("window_s"), r.get("cleanup_s")))
            for r in rows]


def records_by_phase(db: sqlite3.Connection, path: str, run_id: str,
                     lock: Any = None) -> Iterator[tuple[int, list[Record]]]:
    """Store.phase_records on a connection (lock: the Store's, held per query); a file
    whose phases' rows are stored apart (record_read.Scattered) is read in one sorted query."""
    sql = (f"SELECT {record_read.COLUMNS}, rec.rowid FROM records rec WHERE rec.run=? "
           f"AND rec.rowid > ? ORDER BY rec.rowid LIMIT {record_read.CHUNK_ROWS}")

    def fetch(after: int) -> list[tuple]:
        with lock or contextlib.nullcontext():
            return db.execute(sql, (run_id, after)).fetchall()
    return record_read.phases(fetch, record_read.RecordReader(path))

def aggregate_stored(db: sqlite3.Connection, path: str = "") -> None:
    """Aggregate every stored phase of every run from its records (schema 8 -> 9)."""
    from .record_read import COLUMNS, RecordReader, Scattered   # noqa: PLC0415
    for (run,) in db.execute("SELECT id FROM runs").fetchall():
        infos = {p.index: p for p in phases_of(db, path, run)}
        done: set[int] = set()
        try:
            for idx, recs in records_by_phase(db, path, run):
                if idx in infos:
                    db.execute(aggregate_rows.INSERT, (run, idx, aggregate_rows.phase_text(infos[idx], recs)))
                    done.add(idx)
        except Scattered:      # no writer stores a phase's rows apart: one phase at a time
            read = RecordReader(path).record
            for idx in set(infos) - done:
                recs = [read(row) for row in db.execute(
                    f"SELECT {COLUMNS} FROM records rec WHERE rec.run=? AND rec.phase=? "
                    "ORDER BY rec.node, rec.slot", (run, idx))]
                db.execute(aggregate_rows.INSERT, (run, idx, aggregate_rows.phase_text(infos[idx], recs)))
                done.add(idx)
        for idx in set(infos) - done:      # phases stored without records
            db.execute(aggregate_rows.INSERT, (run, idx, aggregate_rows.phase_text(infos[idx], [])))
