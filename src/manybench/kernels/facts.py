"""The facts that decide a figure, declared as data: which library, engine or launcher a
record's work went through (the BLAS and the core whose kernels it ran, the I/O engine, the
MPI family and version). Not figures: text or settings read at run time, that a reader must
see beside the figure to know what it measured. A kernel lists its own (Kernel.facts); the
analysis gathers them per point (analysis/facts.py) and every view shows them from these
declarations: the report's line under a task's table, `report --json`'s `facts`. Export
writes every key of a record's `extra` as it is, declared or not (results/frames.py).
"""
from __future__ import annotations

from dataclasses import dataclass

EXTRA, METRICS = "extra", "metrics"   # where a record keeps the fact


@dataclass(frozen=True)
class Fact:
    name: str                # its key in the record's `extra` (or `metrics`)
    label: str               # how the report names it
    source: str = EXTRA      # EXTRA | METRICS
    note: str = ""           # what it is, beside its declaration

    def of(self, extra: dict, metrics: dict) -> object:
        """Its value in one record (None when the record does not carry it)."""
        return (extra if self.source == EXTRA else metrics).get(self.name)
