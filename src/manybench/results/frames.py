"""results.db's tables as pandas DataFrames: what the Python API returns and export writes.

Columns (docs/results-api.md):
  records    the export contract's columns (record.COLUMNS, params and metrics as dicts),
             then rank, stdout, stderr (the tails kept), missing_metrics (the metric names
             whose regex matched nothing, ";"-joined), then unless nested every param as
             "param.<name>" and every metric as "metric.<name>"; then extra (the record's
             extra as a dict, but for the keys above and `series`) and unless nested each
             of its scalars as "extra.<key>"
  phases     run, index, task, kernel, variant, rep, workers, point, t0_ns, status, label,
             warmup, go_ns (when the go was sent; None before schema 6), prepare_s,
             prepare_node, window_s, cleanup_s (contract.PhaseTimes; None before schema 8),
             params (dict), then unless nested "param.<name>"
  samples    contract.Sample's fields
  telemetry  TelemetryRow's fields (node/wire_types.py)
  series     contract.SeriesPoint's fields: size-indexed tables parsers read (OSU, IMB)
  nodes      contract.StoredNode's fields but inventory (dict), then unless nested each
             scalar of the inventory as "inventory.<key>"
  runs       run_id, name, status, started_ns, ended_ns, phases, slots, cpus, argv, plan_source

pandas is imported only here, when a frame is asked for.
"""
from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any, Iterable

from ..extra_keys import MISSING_METRICS, RANK, SERIES, STDERR, STDOUT
from ..node.wire_types import TelemetryRow
from ..record import COLUMNS, Record
from .contract import PhaseTimes, Sample, SeriesPoint, StoredNode, StoredPhase
from .store import Store

TABLES = ("records", "phases", "samples", "telemetry", "nodes", "series")
PARAM, METRIC, INVENTORY, EXTRA = "param.", "metric.", "inventory.", "extra."
EXTRA_COLUMNS = (RANK, STDOUT, STDERR, MISSING_METRICS)
# extra's keys that are exported elsewhere: as the columns above, and a parser's tables
# (OSU's, IMB's) as the `series` table's rows
NOT_IN_EXTRA = frozenset(EXTRA_COLUMNS) | {SERIES}
PHASE_COLUMNS = ("run", "index", "task", "kernel", "variant", "rep", "workers", "point", "t0_ns",
                 "status", "label", "warmup", "go_ns",
                 *(f.name for f in fields(PhaseTimes)), "params")


def _pd() -> Any:
    import pandas   # noqa: PLC0415 (a report or a run never pays for it)
    return pandas


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _flat(rows: list[dict], src: str, prefix: str) -> None:
    """Add each scalar of row[src] as prefix + key, in the order first seen over the rows."""
    keys = list(dict.fromkeys(k for r in rows for k, v in (r[src] or {}).items() if _scalar(v)))
    for r in rows:
        d = r[src] or {}
        for k in keys:
            v = d.get(k)
            r[prefix + k] = v if _scalar(v) else None


def record_rows(records: Iterable[Record], nested: bool = False) -> list[dict]:
    out, extras = [], []
    for r in records:
        row = r.row()
        extra = r.extra or {}
        row[RANK] = extra.get(RANK)
        row[STDOUT] = extra.get(STDOUT, "")
        row[STDERR] = extra.get(STDERR, "")
        row[MISSING_METRICS] = ";".join(map(str, extra.get(MISSING_METRICS) or ()))
        out.append(row)
        extras.append({k: v for k, v in extra.items() if k not in NOT_IN_EXTRA})
    if not nested:
        _flat(out, "params", PARAM)
        _flat(out, "metrics", METRIC)
    # after every column exported before, so none of theirs moves: extra as a dict (the
    # library, engine, launcher a record's work went through: kernels/facts.py), then
    # unless nested each of its scalars as "extra.<key>"
    for row, x in zip(out, extras):
        row["extra"] = x
    if not nested:
        _flat(out, "extra", EXTRA)
    return out


def phase_rows(phases: Iterable[StoredPhase], nested: bool = False) -> list[dict]:
    out = [{"run": p.run, "index": p.index, "task": p.task, "kernel": p.kernel,
            "variant": p.variant, "rep": p.rep, "workers": p.workers, "point": p.point,
            "t0_ns": p.t0_ns, "status": p.status, "label": p.label, "warmup": p.warmup,
            "go_ns": p.go_ns, **asdict(p.times), "params": p.params} for p in phases]
    if not nested:
        _flat(out, "params", PARAM)
    return out


def node_rows(nodes: Iterable[StoredNode], nested: bool = False) -> list[dict]:
    out = [asdict(n) for n in nodes]
    if not nested:
        _flat(out, "inventory", INVENTORY)
    return out


def _columns(table: str, nested: bool) -> list[str]:
    """The columns of an empty table (a frame of no rows still says what it would hold)."""
    return {"records": [*COLUMNS, *EXTRA_COLUMNS, "extra"], "phases": list(PHASE_COLUMNS),
            "samples": [f.name for f in fields(Sample)],
            "telemetry": [f.name for f in fields(TelemetryRow)],
            "nodes": [f.name for f in fields(StoredNode)],
            "series": [f.name for f in fields(SeriesPoint)]}[table]


def table_rows(store: Store, table: str, run: str | None = None, nested: bool = False
               ) -> list[dict]:
    """One table's rows, of one run or of every run (oldest first)."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; use one of {', '.join(TABLES)}")
    if table == "records":
        return record_rows(store.records(run), nested)
    runs = [run] if run is not None else [r.run_id for r in store.runs()]
    if table == "phases":
        return phase_rows((p for r in runs for p in store.phases(r)), nested)
    if table == "nodes":
        return node_rows((n for r in runs for n in store.nodes(r)), nested)
    if table == "samples":
        return [asdict(s) for r in runs for s in store.samples(r)]
    if table == "series":
        return [asdict(s) for r in runs for s in store.series(r)]
    return [asdict(t) for r in runs for t in store.telemetry_rows(r)]


def frame(store: Store, table: str, run: str | None = None, nested: bool = False) -> Any:
    """A table as a pandas DataFrame (columns as in the module docstring)."""
    rows = table_rows(store, table, run, nested)
    pd = _pd()
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=_columns(table, nested))


def runs_frame(store: Store) -> Any:
    rows = [{"run_id": r.run_id, "name": r.name, "status": r.status,
             "started_ns": r.started_ns, "ended_ns": r.ended_ns, "phases": r.phases,
             "slots": r.notes.slots, "cpus": r.notes.cpus, "argv": r.argv,
             "plan_source": r.plan_source} for r in store.runs()]
    pd = _pd()
    return pd.DataFrame(rows) if rows else pd.DataFrame(
        columns=["run_id", "name", "status", "started_ns", "ended_ns", "phases", "slots",
                 "cpus", "argv", "plan_source"])
