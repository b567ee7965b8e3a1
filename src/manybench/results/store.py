"""results.db: one SQLite file per results directory holding runs, phases, records, nodes,
warnings, provenance snapshots and the setup/teardown commands run on nodes (contract.py types
them; schema.py makes and migrates the tables).

Durability: WAL journal with synchronous=NORMAL. A commit is an append to the -wal file with
no fsync, so committing one phase costs well under a millisecond (a coordinator can commit
thousands of phases in a few seconds), and a committed phase survives a killed process (the WAL
is replayed by the next opener). Only an OS crash or power loss may drop the last commits.

Concurrency: one writer (the coordinator) and any number of readers. WAL readers never block
the writer and see only committed transactions, so a phase appears to a reader all at once,
after write_phase returned. Readers open with mode=ro and query_only, so `report` and `export`
can never change a run, not even while it is being written. Every open checks the file's
schema version (schema.py): a newer file is refused, an older one migrated.
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import fields
from typing import Any, Iterable, Iterator, Mapping, Sequence
from urllib.parse import quote

from ..config import timing
from ..extra_keys import MISSING_METRICS
from ..gc_pause import gc_paused
from ..model import Phase, Plan
from ..node.wire_types import TelemetryRow
from ..record import Record
from ..timebase import now_ns
from .liveness import status_of
from ..status import Status
from .contract import (STEPS, NodeCommand, PhaseStatus, PhaseTimes, RunInfo,
                       RunNotes, RunStatus, Sample, SeriesPoint, Snapshot, StoredNode,
                       StoredPhase, Warning, WarningKind, step_label)
from . import aggregate_rows, record_read
from .phase_read import aggregate_stored, column as _column, phases_of, records_by_phase
from .record_rows import dumps as _dumps, phase_rows
from .schema import SCHEMA_VERSION, DamagedError, SchemaError, check, integrity, upgrade

DB_NAME = "results.db"
# the telemetry table's columns in TelemetryRow's field order (phase_id is stored as phase)
_TELEMETRY = ", ".join("phase" if f.name == "phase_id" else f.name
                       for f in fields(TelemetryRow))
WRITER_CACHE_KIB = 256   # the coordinator's SQLite page cache
def db_problem(e: sqlite3.Error) -> str:
    """SQLite's complaint, a lock stated with the time waited for it."""
    text = str(e)
    if "locked" in text or "busy" in text:
        return f"locked by another process (waited {timing('results.lock_wait'):g} s for it)"
    return text


def db_path(directory: str | os.PathLike) -> str:
    """Path of the results database inside a results directory."""
    return os.path.join(os.fspath(directory), DB_NAME)


class Store:
    """A results directory's results.db.

    `Store(dir)` creates the directory and database when missing (the coordinator);
    `Store(dir, readonly=True)` opens an existing one for reading only (report, export) and
    raises FileNotFoundError when there is none. Both raise schema.SchemaError for a file of
    a newer manybench. A Store may be used from several threads (calls are serialized).
    """

    def __init__(self, directory: str | os.PathLike, readonly: bool = False) -> None:
        self.directory = os.fspath(directory)
        self.path = db_path(directory)
        self.readonly = readonly
        self._lock = threading.Lock()
        self._seq: dict[str, int] = {}     # run -> next warning number
        self.migrated_from: int | None = None   # an older file's schema, migrated in memory
        if readonly:
            if not os.path.isfile(self.path):
                raise FileNotFoundError(f"no {DB_NAME} in {self.directory}")
            self._db = sqlite3.connect(read_uri(self.path), uri=True, isolation_level=None,
                                       check_same_thread=False)
            self._busy()
            with _opening(self.path):
                v = check(self._db, self.path)
                if v == 0:
                    raise SchemaError(f"{self.path} holds no manybench tables: no run was "
                                      "ever recorded there")
                integrity(self._db, self.path)
                if v < SCHEMA_VERSION:
                    self._db = _migrated_copy(self._db, self.path)
                    self.migrated_from = v
            self._db.execute("PRAGMA query_only=ON")
        else:
            os.makedirs(self.directory, exist_ok=True)
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so a transaction is
            # exactly one phase and never opened behind our back by the sqlite3 module.
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._busy()
            with _opening(self.path):
                # another program's file is never touched, nor a damaged one written on
                if check(self._db, self.path):
                    integrity(self._db, self.path)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                # the writer appends: a small page cache keeps its memory flat over a long
                # run (SQLite's default, 2 MiB, filled as the file grew)
                self._db.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
                upgrade(self._db, self.path, lambda db: aggregate_stored(db, self.path))

    def _busy(self) -> None:
        # A checkpoint by the writer may briefly hold a lock a reader wants, and vice versa;
        # wait for it rather than fail, up to results.lock_wait.
        self._db.execute(f"PRAGMA busy_timeout={round(timing('results.lock_wait') * 1000)}")

    def check_writable(self) -> None:
        """Take the write lock once and let it go: a file another process holds is found
        before a run starts (sqlite3.OperationalError 'database is locked' after
        results.lock_wait), not at its first commit."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("ROLLBACK")

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
                    if isinstance(params, (list, Iterator)):   # rows: many (a phase's: zip)
                        db.executemany(sql, params)
                    else:
                        db.execute(sql, params)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def begin_run(self, run_id: str, plan: Plan, argv: list[str], environment: dict,
                  notes: RunNotes | None = None, options: dict | None = None) -> None:
        """Record a new run as 'running'; options: its command's, as parsed (a resume reuses
        them), None when it was started otherwise."""
        row = (run_id, plan.name, plan.source or "", _dumps(plan.raw or {}), _dumps(list(argv)),
               now_ns(), None, RunStatus.RUNNING, _dumps(environment or {}),
               _dumps((notes or RunNotes()).to_json()),
               None if options is None else _dumps(options))
        self._write([("INSERT INTO runs (id, name, plan_source, plan_raw, argv, started_ns, "
                      "ended_ns, status, environment, notes, options) "
                      "VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)])

    def resume_run(self, run_id: str, notes: RunNotes) -> None:
        """Mark a stored run as 'running' again (run --resume), with its new coordinator's
        notes."""
        self._write([("UPDATE runs SET status=?, ended_ns=NULL, notes=? WHERE id=?",
                      (RunStatus.RUNNING, _dumps(notes.to_json()), run_id))])

    def write_nodes(self, run_id: str, nodes: Iterable[StoredNode]) -> None:
        """Store (or replace) the run's nodes: inventory, slots, latest clock offset."""
        rows = [(run_id, n.name, n.host, n.slots, n.cpus, n.machine, int(n.offset_ns),
                 int(n.error_ns), _dumps(n.inventory or {})) for n in nodes]
        self._write([("INSERT OR REPLACE INTO nodes (run, name, host, slots, cpus, machine, "
                      "offset_ns, error_ns, inventory) VALUES (?,?,?,?,?,?,?,?,?)", rows)])

    def add_warning(self, run_id: str, w: Warning) -> None:
        """Store one warning of the run (numbered in the order they came)."""
        if run_id not in self._seq:
            with self._lock:
                last = self._db.execute("SELECT MAX(seq) FROM warnings WHERE run=?",
                                        (run_id,)).fetchone()[0]
            self._seq[run_id] = -1 if last is None else last
        self._seq[run_id] += 1
        self._write([("INSERT INTO warnings (run, seq, kind, message, node, task, phase, "
                      "time_ns) VALUES (?,?,?,?,?,?,?,?)",
                      (run_id, self._seq[run_id], w.kind, w.message, w.node, w.task, w.phase,
                       w.time_ns or now_ns()))])

    def write_snapshots(self, run_id: str, label: str, by_node: Mapping[str, dict]) -> None:
        """Store one snapshot per node (engine.snapshot()'s {node: data}) under a label
        (contract.START at the start of a run)."""
        self._write([_snapshot_rows(run_id, label, by_node)])

    def write_step(self, run_id: str, variant: str, step: str, done: Mapping[str, Any]
                   ) -> None:
        """A variant's setup or teardown as it ran on every node, in one transaction: each
        node's commands and its snapshots labelled "before <step> <variant>" and "after ...".
        done: engine.run_commands()'s {node: protocol.CommandsDone}."""
        if step not in STEPS:
            raise ValueError(f"step must be one of {', '.join(STEPS)}; got {step!r}")
        # the last run_id: the seq subquery's
        cmds = [(run_id, node, variant, step, _dumps(list(o.argv)), int(o.exit_status),
                 int(bool(o.timed_out)), o.stdout or "", o.stderr or "", int(o.started_ns),
                 int(o.ended_ns), run_id) for node, d in done.items() for o in d.outputs]
        self._write([
            _snapshot_rows(run_id, step_label("before", step, variant),
                           {n: d.before for n, d in done.items()}),
            ("INSERT INTO node_commands (run, seq, node, variant, step, argv, exit_status, "
             "timed_out, stdout, stderr, started_ns, ended_ns) SELECT ?, "
             "COALESCE(MAX(seq), -1) + 1, ?,?,?,?,?,?,?,?,?,? FROM node_commands WHERE run=?",
             cmds),
            _snapshot_rows(run_id, step_label("after", step, variant),
                           {n: d.after for n, d in done.items()}),
        ])

    @gc_paused
    def write_phase(self, run_id: str, phase: Phase, t0_ns: int, records: Sequence[Record],
                    status: str = PhaseStatus.OK, samples: Iterable[Sample] = (),
                    go_ns: int | None = None, times: PhaseTimes = PhaseTimes()) -> None:
        """Store one finished phase, all its records and its slots' progress samples in ONE
        transaction.

        Writing the same phase index again replaces it (and its records, samples) as a whole.
        """
        p = StoredPhase.of(run_id, phase, t0_ns, status, go_ns)
        prow = (run_id, p.index, p.task, p.kernel, p.variant, p.rep, p.workers, p.point,
                _dumps(p.params), int(t0_ns), status, p.label, int(p.warmup),
                None if go_ns is None else int(go_ns), times.prepare_s, times.prepare_node,
                times.window_s, times.cleanup_s)
        srows = [(run_id, phase.index, s.rank, s.node, float(s.t_s), float(s.done), s.unit)
                 for s in samples]
        # the readers' summaries of the records (schema 9), made before the rows: those of
        # a phase's columns are made as they are inserted
        agg = (run_id, phase.index, aggregate_rows.phase_text(p, records))
        isql, rrows, xrows = phase_rows(run_id, phase.index, records)
        # a phase stored again (run --resume) replaces what it stored: deleted first, only
        # then (the records have no index since schema 7: a delete reads the table)
        again = [(f"DELETE FROM {t} WHERE run=? AND phase=?", (run_id, phase.index))
                 for t in ("records", "samples", "series")] if self._stored(
                     run_id, phase.index) else []
        self._write([
            *again,
            ("INSERT OR REPLACE INTO phases (run, idx, task, kernel, variant, rep, workers, "
             "point, params, t0_ns, status, label, warmup, go_ns, prepare_s, prepare_node, "
             "window_s, cleanup_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
             prow),
            (isql, rrows),
            ("INSERT INTO samples (run, phase, rank, node, t_s, done, unit) "
             "VALUES (?,?,?,?,?,?,?)", srows),
            (f"INSERT INTO series VALUES ({','.join('?' * 10)})", xrows),
            (aggregate_rows.INSERT, agg),
        ])

    def _stored(self, run_id: str, index: int) -> bool:
        """Whether phase `index` of the run is stored (its records would be)."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM phases WHERE run=? AND idx=?",
                                    (run_id, index)).fetchone() is not None

    def write_telemetry(self, run_id: str, rows: Iterable[TelemetryRow]) -> None:
        """Store nodes' telemetry rows (t_ns already in the coordinator's clock)."""
        out = [(run_id, t.node, int(t.t_ns), float(t.interval_s), t.phase_id,
                float(t.cpu_user_pct), float(t.cpu_system_pct), float(t.cpu_iowait_pct),
                int(t.mem_used_bytes), int(t.mem_cached_bytes), float(t.disk_read_bps),
                float(t.disk_write_bps), float(t.disk_busy_pct), float(t.net_rx_bps),
                float(t.net_tx_bps)) for t in rows]
        if out:
            self._write([(f"INSERT INTO telemetry VALUES ({','.join('?' * 15)})", out)])

    def end_run(self, run_id: str, status: str, end_s: float | None = None) -> None:
        """Mark a run as ended with a RunStatus (other than running, and killed, never
        stored); end_s: the seconds its nodes took to end (notes.end_s), when known."""
        ends = [s for s in RunStatus if s not in (RunStatus.RUNNING, RunStatus.KILLED)]
        if status not in ends:
            raise ValueError(f"end status must be one of {', '.join(ends)}; got {status!r}")
        # on the coordinator's clock, as started_ns: the duration is right across a wall
        # clock step (timebase.py)
        self._write([("UPDATE runs SET status=?, ended_ns=? WHERE id=?",
                      (status, now_ns(), run_id))]
                    + ([("UPDATE runs SET notes=json_set(notes, '$.end_s', ?) WHERE id=?",
                         (end_s, run_id))] if end_s is not None else []))

    def heartbeat(self, run_id: str) -> None:
        """The coordinator is alive: renew the run's notes.heartbeat_ns (the wall clock: a
        reader in another process compares it with its own, results/liveness.py)."""
        self._write([("UPDATE runs SET notes=json_set(notes, '$.heartbeat_ns', ?) WHERE id=?",
                      (time.time_ns(), run_id))])

    def update_notes(self, run_id: str, notes: RunNotes) -> None:
        """Replace a run's notes."""
        self._write([("UPDATE runs SET notes=? WHERE id=?", (_dumps(notes.to_json()), run_id))])

    # -- reads -----------------------------------------------------------------------------
    def _query(self, sql: str, params: tuple = ()) -> list[dict]:
        with self._lock:
            cur = self._db.execute(sql, params)
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def runs(self) -> list[RunInfo]:
        """Every run, oldest first, with the count of phases stored."""
        rows = self._query(
            "SELECT r.*, (SELECT COUNT(*) FROM phases p WHERE p.run = r.id) AS n_phases "
            "FROM runs r ORDER BY r.started_ns, r.rowid")
        def col(r: dict, name: str, kind: type = dict) -> Any:
            return _column(self.path, "runs", name, f"run {r['id']}", json.loads, r[name],
                           kind)
        infos = [RunInfo(run_id=r["id"], name=r["name"], plan_source=r["plan_source"],
                        plan_raw=col(r, "plan_raw"), argv=col(r, "argv", list),
                        started_ns=r["started_ns"], ended_ns=r["ended_ns"], status=r["status"],
                        environment=col(r, "environment"),
                        notes=RunNotes.from_json(col(r, "notes")), phases=r["n_phases"],
                        options=None if r["options"] is None else col(r, "options"))
                for r in rows]
        for info in infos:    # a `running` row whose coordinator is gone reads `killed`
            info.status = status_of(info)
        return infos

    def run(self, run_id: str) -> RunInfo:
        """One run by id; KeyError naming the runs there are when it is not here."""
        runs = self.runs()
        for r in runs:
            if r.run_id == run_id:
                return r
        raise KeyError(f"no run {run_id!r} in {self.path}; runs there: "
                       + (", ".join(r.run_id for r in runs) or "none"))

    def phases(self, run_id: str) -> list[StoredPhase]:
        """The run's stored phases in index order."""
        with self._lock:
            return phases_of(self._db, self.path, run_id)

    def aggregates(self, run_id: str, phases: list[StoredPhase] | None = None
                   ) -> dict[int, list]:
        """Per stored phase, its parts' aggregates (analysis/aggregates.PartAgg), own part
        first; phases: the run's (Store.phases), when already read."""
        phases = self.phases(run_id) if phases is None else phases
        with self._lock:      # decoded as fetched: the run's texts are never all held
            cur = self._db.execute("SELECT phase, data FROM aggregates WHERE run=? ORDER BY "
                                   "phase", (run_id,))
            return aggregate_rows.rows(iter(cur), phases, self.path)

    def failed_records(self, run_id: str) -> list[Record]:
        """The run's records whose status is not ok, by phase, node and slot (what views
        list of a run: its failed records, never all of them)."""
        sql = (f"SELECT {record_read.COLUMNS} FROM records rec WHERE rec.run=? AND "
               "rec.status != ? ORDER BY rec.phase, rec.node, rec.slot")
        with self._lock:
            rows = self._db.execute(sql, (run_id, Status.OK)).fetchall()
        read = record_read.RecordReader(self.path).record
        return [read(row) for row in rows]

    def samples(self, run_id: str, phase_id: int | None = None) -> list[Sample]:
        """The run's progress samples (of one phase if given), by phase, rank and time."""
        rows = self._query("SELECT * FROM samples WHERE run=? AND (? IS NULL OR phase=?) "
                           "ORDER BY phase, rank, t_s", (run_id, phase_id, phase_id))
        return [Sample(run=r["run"], phase_id=r["phase"], rank=r["rank"], node=r["node"],
                       t_s=r["t_s"], done=r["done"], unit=r["unit"]) for r in rows]

    def sample_counts(self, run_id: str) -> dict[int, int]:
        """phase -> how many progress samples it has (phases with none left out), counted by
        SQLite from its index: none of them read."""
        rows = self._query("SELECT phase, COUNT(*) AS n FROM samples WHERE run=? GROUP BY phase",
                           (run_id,))
        return {r["phase"]: r["n"] for r in rows}

    def series(self, run_id: str, phase_id: int | None = None) -> list[SeriesPoint]:
        """The run's size-indexed tables (of one phase if given), by phase, node, slot, name
        and x."""
        rows = self._query("SELECT * FROM series WHERE run=? AND (? IS NULL OR phase=?) "
                           "ORDER BY phase, node, slot, name, x", (run_id, phase_id, phase_id))
        for r in rows:
            r["phase_id"] = r.pop("phase")
        return [SeriesPoint(**r) for r in rows]

    def telemetry(self, run_id: str) -> list[TelemetryRow]:
        """The run's telemetry rows, by time then node, all of them in one list (a run of 64
        nodes sampled every second for 10 hours holds 2.3 M: telemetry_rows reads them a
        batch at a time)."""
        return list(self.telemetry_rows(run_id))

    def telemetry_rows(self, run_id: str) -> Iterator[TelemetryRow]:
        """telemetry()'s rows in its order, read a batch at a time: a pass over them holds
        one batch (the report's hints, the checks at a run's end, the plots)."""
        with self._lock:
            cur = self._db.execute(f"SELECT {_TELEMETRY} FROM telemetry WHERE run=? "
                                   "ORDER BY t_ns, node", (run_id,))
        while True:
            with self._lock:
                rows = cur.fetchmany(record_read.CHUNK_ROWS)
            if not rows:
                return
            for row in rows:
                yield TelemetryRow(*row)

    def nodes(self, run_id: str) -> list[StoredNode]:
        """The run's nodes, by name."""
        rows = self._query("SELECT * FROM nodes WHERE run=? ORDER BY name", (run_id,))
        for r in rows:
            r["inventory"] = _column(self.path, "nodes", "inventory", f"node {r['name']}",
                                     json.loads, r["inventory"])
        return [StoredNode(**r) for r in rows]

    def warnings(self, run_id: str) -> list[Warning]:
        """The run's warnings in the order they came."""
        rows = self._query("SELECT * FROM warnings WHERE run=? ORDER BY seq", (run_id,))
        # a kind renamed since is read under its new name (contract.RENAMED_KINDS)
        return [Warning(kind=WarningKind.read(r["kind"]), message=r["message"], node=r["node"], task=r["task"],
                        phase=r["phase"], time_ns=r["time_ns"], run=r["run"]) for r in rows]

    def snapshots(self, run_id: str, node: str | None = None, label: str | None = None
                  ) -> list[Snapshot]:
        """The run's provenance snapshots in the order stored, of one node or label if given."""
        rows = self._query("SELECT * FROM snapshots WHERE run=? AND (? IS NULL OR node=?) AND "
                           "(? IS NULL OR label=?) ORDER BY seq",
                           (run_id, node, node, label, label))
        return [Snapshot(run=r["run"], node=r["node"], label=r["label"], taken_ns=r["taken_ns"],
                         data=_column(self.path, "snapshots", "data", f"snapshot {r['seq']}",
                                      json.loads, r["data"]), seq=r["seq"]) for r in rows]

    def node_commands(self, run_id: str, node: str | None = None,
                      variant: str | None = None) -> list[NodeCommand]:
        """The setup and teardown commands run in the run, in the order run."""
        rows = self._query("SELECT * FROM node_commands WHERE run=? AND (? IS NULL OR node=?) "
                           "AND (? IS NULL OR variant=?) ORDER BY seq",
                           (run_id, node, node, variant, variant))
        return [NodeCommand(run=r["run"], node=r["node"], variant=r["variant"], step=r["step"],
                            argv=_column(self.path, "node_commands", "argv",
                                         f"command {r['seq']}", json.loads, r["argv"], list),
                            exit_status=r["exit_status"],
                            timed_out=bool(r["timed_out"]), stdout=r["stdout"],
                            stderr=r["stderr"], started_ns=r["started_ns"],
                            ended_ns=r["ended_ns"], seq=r["seq"]) for r in rows]

    def records(self, run_id: str | None = None) -> list[Record]:
        """Records of one run (or of every run, oldest run first), ordered by phase, node, slot."""
        sql = (f"SELECT {record_read.COLUMNS} FROM records rec LEFT JOIN runs ON "
               "runs.id = rec.run " + ("WHERE rec.run=? " if run_id is not None else "")
               + "ORDER BY runs.started_ns, rec.run, rec.phase, rec.node, rec.slot")
        with self._lock:
            rows = self._db.execute(sql, (run_id,) if run_id is not None else ()).fetchall()
        read = record_read.RecordReader(self.path).record
        return [read(row) for row in rows]

    def phase_records_of(self, run_id: str, index: int) -> list[Record]:
        """One phase's records by node and slot (a view that shows records: a Gantt, a
        phase's throughput), the run's others never read."""
        sql = (f"SELECT {record_read.COLUMNS} FROM records rec WHERE rec.run=? AND "
               "rec.phase=? ORDER BY rec.node, rec.slot")
        with self._lock:
            rows = self._db.execute(sql, (run_id, index)).fetchall()
        read = record_read.RecordReader(self.path).record
        return [read(row) for row in rows]

    def said_missing(self, run_id: str) -> list[Record]:
        """The run's records whose extra says they missed a metric (kernels/command.py), by
        phase, node and slot: found by SQLite, the others never read."""
        sql = (f"SELECT {record_read.COLUMNS} FROM records rec WHERE rec.run=? AND "
               "rec.extra LIKE ? ORDER BY rec.phase, rec.node, rec.slot")
        with self._lock:
            rows = self._db.execute(sql, (run_id, f'%"{MISSING_METRICS}"%')).fetchall()
        read = record_read.RecordReader(self.path).record
        return [r for r in map(read, rows) if (r.extra or {}).get(MISSING_METRICS)]

    def ok_slot_times(self, run_id: str, skip: Sequence[str] = ()
                      ) -> Iterator[tuple[str, str, int, str, str, int, float]]:
        """Each ok record's (task, variant, workers, params as sorted JSON, node, slot, its
        per-slot time: elapsed_s, else end - start) by phase, node and slot, but those of
        the kernels in skip: a row's few columns, no Record made (the stragglers' hint)."""
        marks = ",".join("?" * len(skip))
        sql = ("SELECT task, variant, workers, params, node, slot, elapsed_s, start_ns, end_ns "
               "FROM records WHERE run=? AND status=?"
               + (f" AND kernel NOT IN ({marks})" if skip else "")
               + " ORDER BY phase, node, slot")
        keys: dict[str, str] = {}
        with self._lock:
            cur = self._db.execute(sql, (run_id, Status.OK, *skip))
        while True:
            with self._lock:      # a chunk at a time: the run's rows are never all held
                rows = cur.fetchmany(record_read.CHUNK_ROWS)
            if not rows:
                return
            for task, variant, workers, params, node, slot, el, start, end in rows:
                key = keys.get(params)
                if key is None:
                    key = keys[params] = json.dumps(json.loads(params), sort_keys=True,
                                                    default=str)
                yield (task, variant, workers, key, node, slot,
                       el if el > 0 else (end - start) / 1e9)

    def not_ok(self, run_id: str) -> dict[int, int]:
        """How many records of each phase of the run are not ok (phases with none left out),
        counted by SQLite: a resume of a run of millions of records reads no Record."""
        with self._lock:
            rows = self._db.execute("SELECT phase, COUNT(*) FROM records WHERE run=? AND "
                                    "status != ? GROUP BY phase", (run_id, Status.OK)).fetchall()
        return {phase: n for phase, n in rows}

    def phase_records(self, run_id: str) -> Iterator[tuple[int, list[Record]]]:
        """A run's records a phase at a time, in the order the phases were stored: (phase
        index, its records ordered by node and slot). A pass over a large run holds one
        phase's records (run/quality.py). record_read.Scattered: the file's rows of a phase
        are not together (use records())."""
        return records_by_phase(self._db, self.path, run_id, self._lock)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """The file's connection in one read transaction, for a reader's own queries that
        must all see the same rows while a run may be writing the file (export's passes over
        the records: results/record_stream.py). Other calls on this Store wait until it ends."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                self._db.execute("ROLLBACK")     # nothing was written: read-only


def _snapshot_rows(run_id: str, label: str, by_node: Mapping[str, dict]) -> tuple[str, list]:
    """The insert of one snapshot per node, numbered after the run's last (seq)."""
    rows = []
    for node, data in by_node.items():
        data = data if isinstance(data, dict) else {}
        taken = data.get("taken_ns")
        rows.append((run_id, node, label, taken if isinstance(taken, int) else now_ns(),
                     _dumps(data), run_id))
    return ("INSERT INTO snapshots (run, seq, node, label, taken_ns, data) SELECT ?, "
            "COALESCE(MAX(seq), -1) + 1, ?, ?, ?, ? FROM snapshots WHERE run=?", rows)


@contextlib.contextmanager
def _opening(path: str) -> Iterator[None]:
    """SQLite's refusals while opening, as DamagedError naming the file (a lock is left to
    the caller: it is no damage)."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        if "locked" in str(e) or "busy" in str(e):
            raise
        raise DamagedError(f"{path} is damaged or is not a SQLite database: {e}") from None


def _migrated_copy(db: sqlite3.Connection, path: str) -> sqlite3.Connection:
    """An older file opened read-only: migrate a private copy in memory, never the file."""
    mem = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    db.backup(mem)
    db.close()
    upgrade(mem, path, lambda db: aggregate_stored(db, path))
    return mem


def read_uri(path: str) -> str:
    """The URI a reader opens a results.db with: read-only. A WAL database read needs its
    -shm file, which SQLite makes beside it: where the directory cannot be written (a
    read-only mount, another user's directory) and there is none, the file is opened
    immutable (nothing changes it there, and with no log beside it the file holds every
    commit); a log with no -shm file cannot be read there (SchemaError saying so)."""
    path = os.path.abspath(path)
    uri = "file:" + _uri_path(path) + "?mode=ro"
    if os.access(os.path.dirname(path), os.W_OK) or os.path.exists(path + "-shm"):
        return uri
    try:
        logged = os.path.getsize(path + "-wal") > 0
    except OSError:
        logged = False
    if logged:
        raise SchemaError(f"{path}: its last commits are in {os.path.basename(path)}-wal, "
                          f"which SQLite cannot read without {os.path.basename(path)}-shm in "
                          "a directory it cannot write (read-only): copy the directory where "
                          "it can be written, or open it there once")
    return uri + "&immutable=1"


def _uri_path(path: str) -> str:
    # A file: URI must escape the characters URIs give meaning to (e.g. '?' or '#' in a path).
    return quote(path, safe="/")


__all__ = ["DB_NAME", "DamagedError", "SchemaError", "Store", "db_path", "read_uri"]
