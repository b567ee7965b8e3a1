"""One record: what one slot measured in one phase. Field order is the export contract."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The export columns of DESIGN.md, in order. Other tools rely on exactly these.
COLUMNS = ("run", "phase", "task", "kernel", "variant", "rep", "workers", "node", "slot", "cpu",
           "t0_ns", "start_ns", "end_ns", "elapsed_s", "ops", "bytes", "status", "error",
           "params", "metrics")
STATUSES = ("ok", "error", "timeout", "lost")


@dataclass
class Record:
    run: str
    phase: int
    task: str
    kernel: str
    variant: str
    rep: int
    workers: int
    node: str
    slot: int
    cpu: int
    t0_ns: int
    start_ns: int = 0
    end_ns: int = 0
    elapsed_s: float = 0.0
    ops: int = 0
    bytes: int = 0
    status: str = "ok"
    error: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    # Stored beside the record, never exported as columns:
    hist: dict[int, int] | None = None                 # sparse latency histogram (kernels/hist.py)
    extra: dict[str, Any] = field(default_factory=dict)  # stdout/stderr tails, armed_ns, ...

    def row(self) -> dict[str, Any]:
        """The record as the export contract's columns (a new dict)."""
        d = asdict(self)
        return {c: d[c] for c in COLUMNS}
