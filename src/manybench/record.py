"""One record: what one slot measured in one phase. The columns are defined here, once.

The export contract is COLUMNS, in field order; `hist` and `extra` are stored beside each
record, outside the contract (`export` writes `extra` after every other column:
results/frames.py). The store's table is made from these fields (results/schema.py),
so adding a field here adds the column everywhere.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .status import Status

STATUSES = tuple(Status)    # status.py


_NONE = object()


def _col(sql: str, default: Any = _NONE, *, export: bool = True, json: bool = False,
         factory: Any = None) -> Any:
    """A field with its SQL column type and whether it is exported / stored as JSON."""
    meta = {"sql": sql, "export": export, "json": json}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    if default is not _NONE:
        return field(default=default, metadata=meta)
    return field(metadata=meta)


@dataclass
class Record:
    run: str = _col("TEXT NOT NULL")
    phase: int = _col("INTEGER NOT NULL")
    task: str = _col("TEXT NOT NULL")
    kernel: str = _col("TEXT NOT NULL")
    variant: str = _col("TEXT NOT NULL")
    rep: int = _col("INTEGER NOT NULL")
    workers: int = _col("INTEGER NOT NULL")
    node: str = _col("TEXT NOT NULL")
    slot: int = _col("INTEGER NOT NULL")
    cpu: int = _col("INTEGER NOT NULL")
    t0_ns: int = _col("INTEGER NOT NULL")          # scheduled start, coordinator's clock
    start_ns: int = _col("INTEGER NOT NULL", 0)    # first instant of the timed work
    end_ns: int = _col("INTEGER NOT NULL", 0)      # last instant
    elapsed_s: float = _col("REAL NOT NULL", 0.0)  # monotonic clock on the slot
    ops: int = _col("INTEGER NOT NULL", 0)
    bytes: int = _col("INTEGER NOT NULL", 0)
    status: str = _col("TEXT NOT NULL", Status.OK)   # a Status
    error: str = _col("TEXT NOT NULL", "")
    params: dict[str, Any] = _col("TEXT NOT NULL", json=True, factory=dict)
    metrics: dict[str, Any] = _col("TEXT NOT NULL", json=True, factory=dict)
    # sparse latency histogram {bucket: count} (kernels/hist.py)
    hist: dict[int, int] | None = _col("TEXT", None, export=False)
    # stdout/stderr tails, armed_ns, rank, ...
    extra: dict[str, Any] = _col("TEXT NOT NULL", export=False, json=True, factory=dict)

    def row(self) -> dict[str, Any]:
        """The record as the export contract's columns (a new dict)."""
        d = asdict(self)
        return {c: d[c] for c in COLUMNS}


FIELDS = fields(Record)
# The export columns, in order. Other tools rely on exactly these.
COLUMNS = tuple(f.name for f in FIELDS if f.metadata["export"])

