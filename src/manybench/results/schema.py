"""results.db's tables, its schema version, and the migrations from every older version.

The version is SQLite's user_version. Every open checks it (store.py): a newer file is refused
with a SchemaError naming both versions; an older one is migrated, in place when opened for
writing, or in a private in-memory copy when opened read-only (report and export never
change a file).

  1  runs, phases, records (notes: free-form JSON holding clocks, clock_warnings, lost)
  2  + nodes (each node's inventory, collected on the node, and its clock) and warnings
  3  + snapshots (provenance per node: at the start, around each variant's setup and
       teardown) and node_commands (the setup and teardown commands run, with their output)
  4  + samples (each slot's progress inside a phase), telemetry (each node's cpu, memory,
       disk and network over the run) and phases.warmup (warm-up repetitions, not analysed)
  5  + series (size-indexed tables a parser read from a record's output: OSU's, IMB's)
  6  + phases.go_ns (when the coordinator sent the phase's go: the phase cycle, SMTEF's
       figure; NULL for phases stored before)
  7  records without a primary key in a new file (an older file keeps its own): rows are
     inserted, not replaced, and a phase stored again is deleted first
  8  + phases.prepare_s, prepare_node, window_s, cleanup_s (where a phase's time went: its
       prepare and connect rounds, its timed window, its wait after the window; NULL for
       phases stored before and for phases not run)
  9  + aggregates (each phase's, from its records)
  10 + runs.options (the run command's options as parsed, JSON, for --resume; NULL for runs
       stored before: a resume parses their argv)

The records table is the record table's (record_table.py): a field added there says the
version that adds it (`since`), and a file of an older version gets its column, with the
field's default in every stored record, when it is migrated to that version
(_record_columns_added).
"""
from __future__ import annotations

import json
import sqlite3
from typing import Callable

from .contract import WarningKind
from ..record import FIELDS
from ..record_table import RECORD, fields_of

SCHEMA_VERSION = 10
AGGREGATED = 9      # the first version that stores each phase's aggregates


class SchemaError(Exception):
    """A results.db this version cannot read; the message says why and what to do."""


class DamagedError(SchemaError):
    """A results.db that cannot be trusted: pages SQLite finds broken, a table missing, a row
    whose JSON does not decode. Readers stop (exit 2) rather than print wrong figures."""


# the tables each version has (a file of that version missing one is damaged)
TABLES = {1: ("runs", "phases", "records"), 2: ("nodes", "warnings"),
          3: ("snapshots", "node_commands"), 4: ("samples", "telemetry"), 5: ("series",),
          9: ("aggregates",)}


# No key since version 7: its index was a quarter of a phase's insert (64,000 rows at 1,000
# nodes x 64 slots), and nothing needs it: a phase's records are written in one INSERT, once
# (a phase stored again is deleted first: store.write_phase), and read in full, sorted
# (store.records). A file of version 6 or older keeps its key.
_RECORDS = ("CREATE TABLE IF NOT EXISTS records (\n    "
            + ",\n    ".join(f"{f.name} {f.metadata['sql']}" for f in FIELDS)
            + "\n);\n")

_V1 = """
CREATE TABLE IF NOT EXISTS runs (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    plan_source TEXT NOT NULL,          -- the plan's TOML text as given
    plan_raw    TEXT NOT NULL,          -- json: the validated plan dict, overrides applied
    argv        TEXT NOT NULL,          -- json list
    started_ns  INTEGER NOT NULL,
    ended_ns    INTEGER,                -- NULL while running (or when the process was killed)
    status      TEXT NOT NULL,
    environment TEXT NOT NULL,          -- json: the coordinator's inventory
    notes       TEXT NOT NULL           -- json: contract.RunNotes
);
CREATE TABLE IF NOT EXISTS phases (
    run     TEXT NOT NULL REFERENCES runs(id),
    idx     INTEGER NOT NULL,
    task    TEXT NOT NULL,
    kernel  TEXT NOT NULL,
    variant TEXT NOT NULL,
    rep     INTEGER NOT NULL,
    workers INTEGER NOT NULL,
    point   TEXT NOT NULL,
    params  TEXT NOT NULL,              -- json
    t0_ns   INTEGER NOT NULL,
    status  TEXT NOT NULL,
    label   TEXT NOT NULL,
    PRIMARY KEY (run, idx)
);
""" + _RECORDS

_V2 = """
CREATE TABLE IF NOT EXISTS nodes (
    run       TEXT NOT NULL REFERENCES runs(id),
    name      TEXT NOT NULL,
    host      TEXT NOT NULL,
    slots     INTEGER NOT NULL,
    cpus      INTEGER NOT NULL,
    machine   TEXT NOT NULL,
    offset_ns INTEGER NOT NULL,         -- clock minus the coordinator's, latest estimate
    error_ns  INTEGER NOT NULL,         -- bound on it, the largest of the run
    inventory TEXT NOT NULL,            -- json: environment.collect() on the node
    PRIMARY KEY (run, name)
);
CREATE TABLE IF NOT EXISTS warnings (
    run     TEXT NOT NULL REFERENCES runs(id),
    seq     INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    message TEXT NOT NULL,
    node    TEXT NOT NULL,
    task    TEXT NOT NULL,
    phase   INTEGER,
    time_ns INTEGER NOT NULL,
    PRIMARY KEY (run, seq)
);
"""

_V3 = """
CREATE TABLE IF NOT EXISTS snapshots (
    run      TEXT NOT NULL REFERENCES runs(id),
    seq      INTEGER NOT NULL,          -- in the order stored, over the run
    node     TEXT NOT NULL,
    label    TEXT NOT NULL,             -- "start", "before setup <variant>", ...
    taken_ns INTEGER NOT NULL,          -- the coordinator's clock
    data     TEXT NOT NULL,             -- json: provenance.snapshot() on the node
    PRIMARY KEY (run, seq)
);
CREATE TABLE IF NOT EXISTS node_commands (
    run         TEXT NOT NULL REFERENCES runs(id),
    seq         INTEGER NOT NULL,       -- in the order run, over the run
    node        TEXT NOT NULL,
    variant     TEXT NOT NULL,
    step        TEXT NOT NULL,          -- setup | teardown
    argv        TEXT NOT NULL,          -- json list
    exit_status INTEGER NOT NULL,       -- < 0: killed by that signal
    timed_out   INTEGER NOT NULL,       -- 0 | 1
    stdout      TEXT NOT NULL,          -- the tail
    stderr      TEXT NOT NULL,
    started_ns  INTEGER NOT NULL,       -- the coordinator's clock
    ended_ns    INTEGER NOT NULL,
    PRIMARY KEY (run, seq)
);
"""


_V4_TABLES = """
CREATE TABLE IF NOT EXISTS samples (
    run     TEXT NOT NULL REFERENCES runs(id),
    phase   INTEGER NOT NULL,
    rank    INTEGER NOT NULL,
    node    TEXT NOT NULL,
    t_s     REAL NOT NULL,              -- seconds since the phase's T0, coordinator's clock
    done    REAL NOT NULL,              -- cumulative amount of unit finished by then
    unit    TEXT NOT NULL               -- bytes | ops
);
CREATE INDEX IF NOT EXISTS samples_phase ON samples (run, phase, rank, t_s);
CREATE TABLE IF NOT EXISTS telemetry (
    run            TEXT NOT NULL REFERENCES runs(id),
    node           TEXT NOT NULL,
    t_ns           INTEGER NOT NULL,    -- end of the interval, coordinator's clock
    interval_s     REAL NOT NULL,
    phase          INTEGER,             -- the phase running on the node, NULL between phases
    cpu_user_pct   REAL NOT NULL,
    cpu_system_pct REAL NOT NULL,
    cpu_iowait_pct REAL NOT NULL,
    mem_used_bytes INTEGER NOT NULL,
    mem_cached_bytes INTEGER NOT NULL,
    disk_read_bps  REAL NOT NULL,
    disk_write_bps REAL NOT NULL,
    disk_busy_pct  REAL NOT NULL,
    net_rx_bps     REAL NOT NULL,
    net_tx_bps     REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS telemetry_run ON telemetry (run, t_ns);
"""
_V5 = """
CREATE TABLE IF NOT EXISTS series (
    run    TEXT NOT NULL REFERENCES runs(id),
    phase  INTEGER NOT NULL,
    node   TEXT NOT NULL,               -- the record (node, slot) whose output it was
    slot   INTEGER NOT NULL,
    rank   INTEGER,                     -- that record's rank
    name   TEXT NOT NULL,               -- osu_latency, Allreduce.t_avg, ...
    x      REAL NOT NULL,               -- message size
    y      REAL NOT NULL,
    unit   TEXT NOT NULL,               -- of y: us, MB/s, count
    x_unit TEXT NOT NULL                -- of x: bytes
);
CREATE INDEX IF NOT EXISTS series_phase ON series (run, phase, name, x);
"""
# a new file's phases get the column in _V1's table through this same statement
_V4_WARMUP = "ALTER TABLE phases ADD COLUMN warmup INTEGER NOT NULL DEFAULT 0"


_V6_GO = "ALTER TABLE phases ADD COLUMN go_ns INTEGER"
# seconds in the coordinator's clock (docs/definitions.md, "time outside the windows")
_V8_TIMES = ("ALTER TABLE phases ADD COLUMN prepare_s REAL;\n"
             "ALTER TABLE phases ADD COLUMN prepare_node TEXT;\n"
             "ALTER TABLE phases ADD COLUMN window_s REAL;\n"
             "ALTER TABLE phases ADD COLUMN cleanup_s REAL")

# one row per stored phase: the JSON list of its parts' aggregates (analysis/aggregates.py)
_V9 = """
CREATE TABLE IF NOT EXISTS aggregates (
    run    TEXT NOT NULL REFERENCES runs(id),
    phase  INTEGER NOT NULL,
    data   TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS aggregates_phase ON aggregates (run, phase);
"""
# json: the `run` command's options as click parsed them (run/resume.py reuses them)
_V10_OPTIONS = "ALTER TABLE runs ADD COLUMN options TEXT"


def _script(db: sqlite3.Connection, sql: str) -> None:
    # statement by statement: executescript would commit the migration's transaction early
    for stmt in sql.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _v1_to_v2(db: sqlite3.Connection) -> None:
    """Add nodes and warnings; fill them from what version 1 kept in each run's notes (its
    clocks, clock warnings and lost nodes). The notes themselves are left as they were."""
    _script(db, _V2)
    for run, notes_text, env_text in db.execute("SELECT id, notes, environment FROM runs"
                                                ).fetchall():
        notes, env = json.loads(notes_text or "{}"), json.loads(env_text or "{}")
        notes = notes if isinstance(notes, dict) else {}
        host = str(env.get("hostname") or "").split(".")[0]
        clocks = notes.get("clocks") if isinstance(notes.get("clocks"), dict) else {}
        for name, c in clocks.items():
            c = c if isinstance(c, dict) else {}
            # version 1 stored only the coordinator's inventory: it is this node's own only
            # when the node is the coordinator's host
            inventory = env if name == host else {}
            db.execute("INSERT OR IGNORE INTO nodes VALUES (?,?,?,?,?,?,?,?,?)",
                       (run, name, "", 0, 0, "", int(c.get("offset_ns") or 0),
                        int(c.get("error_ns") or 0), json.dumps(inventory)))
        warnings = [(WarningKind.CLOCK, f"node {n}: clock offset bound exceeded the plan's "
                              "clock_tolerance", n) for n in notes.get("clock_warnings") or []]
        lost = notes.get("lost") if isinstance(notes.get("lost"), dict) else {}
        warnings += [(WarningKind.NODE_LOST, str(why), n) for n, why in lost.items()]
        for seq, (kind, msg, node) in enumerate(warnings):
            db.execute("INSERT INTO warnings VALUES (?,?,?,?,?,?,?,?)",
                       (run, seq, kind, msg, str(node), "", None, 0))


def _v2_to_v3(db: sqlite3.Connection) -> None:
    """Add snapshots and node_commands, empty: runs before version 3 took none."""
    _script(db, _V3)


def _v3_to_v4(db: sqlite3.Connection) -> None:
    """Add samples and telemetry, empty (runs before version 4 took none), and
    phases.warmup, 0 (they had no warm-up repetitions)."""
    db.execute(_V4_WARMUP)
    _script(db, _V4_TABLES)


def _v4_to_v5(db: sqlite3.Connection) -> None:
    """Add series, empty: runs before version 5 kept no tables."""
    _script(db, _V5)


def _v5_to_v6(db: sqlite3.Connection) -> None:
    """Add phases.go_ns, NULL: runs before version 6 did not store when the go was sent."""
    db.execute(_V6_GO)


def _v6_to_v7(db: sqlite3.Connection) -> None:
    """Nothing to change: the records keep their key (rebuilding a large table to drop an
    index only its writer paid for is not worth it); version 7's writer inserts where it
    replaced, which the key leaves as it was."""


def _v7_to_v8(db: sqlite3.Connection) -> None:
    """Add phases.prepare_s, prepare_node, window_s and cleanup_s, NULL: runs before version
    8 did not store where a phase's time went."""
    _script(db, _V8_TIMES)


def _v8_to_v9(db: sqlite3.Connection) -> None:
    """Add aggregates; upgrade's `fill` aggregates every stored phase from its records (the
    store's: reading records is not this module's)."""
    _script(db, _V9)


def _v9_to_v10(db: sqlite3.Connection) -> None:
    """Add runs.options, NULL: runs before version 10 kept only their command line."""
    db.execute(_V10_OPTIONS)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3,
                                                              3: _v3_to_v4, 4: _v4_to_v5,
                                                              5: _v5_to_v6, 6: _v6_to_v7,
                                                              7: _v7_to_v8, 8: _v8_to_v9,
                                                              9: _v9_to_v10}


def _record_columns_added(db: sqlite3.Connection, version: int) -> None:
    """Add the records columns of the fields that schema `version` added (record_table.py:
    Field.since), each with its default in the records already stored (a NOT NULL column
    needs one)."""
    for f in fields_of(RECORD):
        if f.since == version:
            default = f.empty()
            if f.json:
                default = json.dumps(default, separators=(",", ":"))
            literal = "NULL" if default is None else (
                "'" + default.replace("'", "''") + "'" if isinstance(default, str)
                else repr(default))
            db.execute(f"ALTER TABLE records ADD COLUMN {f.name} {f.sql} DEFAULT {literal}")


def version(db: sqlite3.Connection) -> int:
    v = db.execute("PRAGMA user_version").fetchone()[0]
    if v == 0 and db.execute("SELECT 1 FROM sqlite_master WHERE name='runs'").fetchone():
        return 1    # tables without a version: the first layout
    return v


def check(db: sqlite3.Connection, path: str) -> int:
    """The file's version (0: a new, empty file); SchemaError when this manybench is too old
    to read it or another program made it, DamagedError when one of its tables is gone."""
    v = version(db)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if names and "runs" not in names:
        shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
        raise SchemaError(f"{path} is not a manybench results database (another program's "
                          f"SQLite file, holding tables {shown}): give another directory")
    if v > SCHEMA_VERSION:
        raise SchemaError(f"{path} was written by a newer manybench (results schema {v}; this "
                          f"one reads up to {SCHEMA_VERSION}): upgrade manybench to read it")
    missing = [t for k in range(1, v + 1) for t in TABLES.get(k, ()) if t not in names]
    if missing:
        raise DamagedError(f"{path} is damaged: table {', '.join(missing)} is missing")
    return v


def integrity(db: sqlite3.Connection, path: str) -> None:
    """DamagedError when SQLite's quick_check finds broken pages (read on, they would give
    wrong rows or none without an error)."""
    try:
        rows = db.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as e:
        if "locked" in str(e):
            raise
        raise DamagedError(f"{path} is damaged: {e}") from None
    problems = [r[0] for r in rows if r[0] != "ok"]
    if problems:
        raise DamagedError(f"{path} is damaged: {'; '.join(problems)} (SQLite's quick_check)")


def upgrade(db: sqlite3.Connection, path: str,
            fill: Callable[[sqlite3.Connection], None] | None = None) -> None:
    """Create the tables of a new file, or migrate an older one, in one transaction;
    fill(db): what a file from before schema 9 needs of its records once migrated (the
    phases' aggregates: results/store.py)."""
    v = check(db, path)
    if v == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if v == 0:
            _script(db, _V1 + _V2 + _V3)
            _v3_to_v4(db)
            _v4_to_v5(db)
            _v5_to_v6(db)
            _v7_to_v8(db)
            _script(db, _V9)
            _v9_to_v10(db)
        else:
            for old in range(v, SCHEMA_VERSION):
                if old in MIGRATIONS:
                    MIGRATIONS[old](db)
                _record_columns_added(db, old + 1)
            if v < 9 and fill is not None:
                fill(db)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
