"""results.db: one SQLite file per results directory holding runs, phases and records.

Durability: WAL journal with synchronous=NORMAL. A commit is an append to the -wal file with
no fsync, so committing one phase costs well under a millisecond (a coordinator can commit
thousands of phases in a few seconds), and a committed phase survives a killed process (the WAL
is replayed by the next opener). Only an OS crash or power loss may drop the last commits.

Concurrency: one writer (the coordinator) and any number of readers. WAL readers never block
the writer and see only committed transactions, so a phase appears to a reader all at once,
after write_phase returned. Readers open with mode=ro and query_only, so `report` and `export`
can never change a run, not even while it is being written.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from typing import Any, Iterable
from urllib.parse import quote

from .model import Phase, Plan
from .record import Record

DB_NAME = "results.db"
RUN_STATUSES = ("running", "finished", "failed", "interrupted", "aborted")
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    plan_source TEXT NOT NULL,          -- the plan's TOML text as given
    plan_raw    TEXT NOT NULL,          -- json: the validated plan dict, overrides applied
    argv        TEXT NOT NULL,          -- json list
    started_ns  INTEGER NOT NULL,
    ended_ns    INTEGER,                -- NULL while running (or when the process was killed)
    status      TEXT NOT NULL,
    environment TEXT NOT NULL,          -- json (environment.collect())
    notes       TEXT NOT NULL           -- json, e.g. oversubscription
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
CREATE TABLE IF NOT EXISTS records (
    run TEXT NOT NULL, phase INTEGER NOT NULL, task TEXT NOT NULL, kernel TEXT NOT NULL,
    variant TEXT NOT NULL, rep INTEGER NOT NULL, workers INTEGER NOT NULL, node TEXT NOT NULL,
    slot INTEGER NOT NULL, cpu INTEGER NOT NULL, t0_ns INTEGER NOT NULL,
    start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, elapsed_s REAL NOT NULL,
    ops INTEGER NOT NULL, bytes INTEGER NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL,
    params TEXT NOT NULL, metrics TEXT NOT NULL,   -- json objects
    hist TEXT,                                     -- json {bucket: count} or NULL
    extra TEXT NOT NULL,                           -- json object
    PRIMARY KEY (run, phase, node, slot)
);
"""

# Record fields in storage order: the export columns, then what is stored but never exported.
_REC_FIELDS = ("run", "phase", "task", "kernel", "variant", "rep", "workers", "node", "slot",
               "cpu", "t0_ns", "start_ns", "end_ns", "elapsed_s", "ops", "bytes", "status",
               "error", "params", "metrics", "hist", "extra")
_REC_JSON = ("params", "metrics", "extra")
_INSERT_RECORD = (f"INSERT OR REPLACE INTO records ({', '.join(_REC_FIELDS)}) "
                  f"VALUES ({', '.join('?' * len(_REC_FIELDS))})")


def _dumps(value: Any) -> str:
    # default=str: a stray Path or Decimal in params must not lose a phase at commit time
    return json.dumps(value, separators=(",", ":"), default=str)


_decode = json.JSONDecoder().decode


def _loads(text: str) -> Any:
    # reading a large run decodes several objects per record: skip json.loads' checks and
    # the parser altogether for the common empty object
    return {} if text == "{}" else _decode(text)


def _hist_out(hist: dict[int, int] | None) -> str | None:
    return None if hist is None else _dumps({str(k): v for k, v in hist.items()})


def _hist_in(text: str | None) -> dict[int, int] | None:
    # JSON object keys are strings; the histogram's buckets are ints
    return None if text is None else {int(k): v for k, v in _decode(text).items()}


def db_path(directory: str | os.PathLike) -> str:
    """Path of the results database inside a results directory."""
    return os.path.join(os.fspath(directory), DB_NAME)


class Store:
    """A results directory's results.db.

    `Store(dir)` creates the directory and database when missing (the coordinator);
    `Store(dir, readonly=True)` opens an existing one for reading only (report, export) and
    raises FileNotFoundError when there is none. A Store may be used from several threads
    (calls are serialized), e.g. a coordinator committing from its collector thread.
    """

    def __init__(self, directory: str | os.PathLike, readonly: bool = False) -> None:
        self.directory = os.fspath(directory)
        self.path = db_path(directory)
        self.readonly = readonly
        self._lock = threading.Lock()
        if readonly:
            if not os.path.isfile(self.path):
                raise FileNotFoundError(f"no {DB_NAME} in {self.directory}")
            uri = "file:" + _uri_path(os.path.abspath(self.path)) + "?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None,
                                       check_same_thread=False)
            self._busy()
            self._db.execute("PRAGMA query_only=ON")
        else:
            os.makedirs(self.directory, exist_ok=True)
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction is
            # exactly one phase and never opened behind our back by the sqlite3 module.
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._busy()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            if self._db.execute("PRAGMA user_version").fetchone()[0] == 0:
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _busy(self) -> None:
        # A checkpoint by the writer may briefly hold a lock a reader wants, and vice versa;
        # wait for it rather than fail.
        self._db.execute("PRAGMA busy_timeout=10000")

    # -- context manager -------------------------------------------------------------------
    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None  # type: ignore[assignment]

    # -- writes ----------------------------------------------------------------------------
    def _write(self, statements: Iterable[tuple[str, Any]]) -> None:
        """Run (sql, params | [params, ...]) pairs in one transaction: all or nothing."""
        if self.readonly:
            raise PermissionError(f"{self.path} is open read-only")
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    if isinstance(params, list):
                        db.executemany(sql, params)
                    else:
                        db.execute(sql, params)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def begin_run(self, run_id: str, plan: Plan, argv: list[str], environment: dict,
                  notes: dict | None = None) -> None:
        """Record a new run as 'running'."""
        row = (run_id, plan.name, plan.source or "", _dumps(plan.raw or {}), _dumps(list(argv)),
               time.time_ns(), None, "running", _dumps(environment or {}), _dumps(notes or {}))
        self._write([("INSERT INTO runs (id, name, plan_source, plan_raw, argv, started_ns, "
                      "ended_ns, status, environment, notes) VALUES (?,?,?,?,?,?,?,?,?,?)", row)])

    def write_phase(self, run_id: str, phase: Phase, t0_ns: int, records: list[Record],
                    status: str = "ok") -> None:
        """Store one finished phase and all its records in ONE transaction.

        Writing the same phase index again replaces it (and its records) as a whole.
        """
        prow = (run_id, phase.index, phase.task.name, phase.kernel, phase.variant, phase.rep,
                phase.workers, phase.point, _dumps(phase.params), int(t0_ns), status,
                phase.label)
        rrows = []
        for r in records:
            d = {f: getattr(r, f) for f in _REC_FIELDS}
            for f in _REC_JSON:
                d[f] = _dumps(d[f])
            d["hist"] = _hist_out(r.hist)
            rrows.append(tuple(d[f] for f in _REC_FIELDS))
        self._write([
            ("DELETE FROM records WHERE run=? AND phase=?", (run_id, phase.index)),
            ("INSERT OR REPLACE INTO phases (run, idx, task, kernel, variant, rep, workers, "
             "point, params, t0_ns, status, label) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", prow),
            (_INSERT_RECORD, rrows),
        ])

    def end_run(self, run_id: str, status: str) -> None:
        """Mark a run as ended with one of RUN_STATUSES (other than 'running')."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"end status must be one of {', '.join(RUN_STATUSES[1:])}; "
                             f"got {status!r}")
        self._write([("UPDATE runs SET status=?, ended_ns=? WHERE id=?",
                      (status, time.time_ns(), run_id))])

    def update_notes(self, run_id: str, notes: dict) -> None:
        """Replace a run's notes (e.g. add an oversubscription note once placement is known)."""
        self._write([("UPDATE runs SET notes=? WHERE id=?", (_dumps(notes), run_id))])

    # -- reads -----------------------------------------------------------------------------
    def _query(self, sql: str, params: tuple = ()) -> list[dict]:
        with self._lock:
            cur = self._db.execute(sql, params)
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def runs(self) -> list[dict]:
        """Every run, oldest first: run_id, name, plan_source, plan_raw, argv, started_ns,
        ended_ns (None while running or after a kill), status, environment, notes
        (json fields decoded), phases (count stored)."""
        rows = self._query(
            "SELECT r.*, (SELECT COUNT(*) FROM phases p WHERE p.run = r.id) AS n_phases "
            "FROM runs r ORDER BY r.started_ns, r.rowid")
        out = []
        for r in rows:
            out.append({
                "run_id": r["id"], "name": r["name"], "plan_source": r["plan_source"],
                "plan_raw": json.loads(r["plan_raw"]), "argv": json.loads(r["argv"]),
                "started_ns": r["started_ns"], "ended_ns": r["ended_ns"], "status": r["status"],
                "environment": json.loads(r["environment"]), "notes": json.loads(r["notes"]),
                "phases": r["n_phases"],
            })
        return out

    def phases(self, run_id: str) -> list[dict]:
        """The run's stored phases in index order: run, index, task, kernel, variant, rep,
        workers, point, params (decoded), t0_ns, status, label."""
        rows = self._query("SELECT * FROM phases WHERE run=? ORDER BY idx", (run_id,))
        for r in rows:
            r["index"] = r.pop("idx")
            r["params"] = json.loads(r["params"])
        return rows

    def records(self, run_id: str | None = None) -> list[Record]:
        """Records of one run (or of every run, oldest run first), ordered by phase, node, slot."""
        cols = ", ".join(f"rec.{f}" for f in _REC_FIELDS)
        sql = (f"SELECT {cols} FROM records rec LEFT JOIN runs ON runs.id = rec.run "
               + ("WHERE rec.run=? " if run_id is not None else "")
               + "ORDER BY runs.started_ns, rec.run, rec.phase, rec.node, rec.slot")
        rows = self._query(sql, (run_id,) if run_id is not None else ())
        out = []
        for r in rows:
            for f in _REC_JSON:
                r[f] = _loads(r[f])
            r["hist"] = _hist_in(r["hist"])
            out.append(Record(**r))
        return out


def _uri_path(path: str) -> str:
    # A file: URI must escape the characters URIs give meaning to (e.g. '?' or '#' in a path).
    return quote(path, safe="/")


def open_readonly(directory: str | os.PathLike) -> Store:
    """A read-only Store for report and export."""
    return Store(directory, readonly=True)
