"""A slot that stalled (SIGSTOPped, swapped out, its node frozen) must not pass as plain ok.

A record is flagged when its span from T0 to its end is far longer than its peers' in the
same phase (its task's other slots): over STALL_FACTOR times their median and over STALL_MIN_S more. The span from T0
counts a late start (a slot stopped before T0 starts late) and a long run alike. The record
keeps its status (its figures are what it measured) and gains `metrics.stall_s`, the excess
over the peers' median span; the run gets a stored `stall` warning.
"""
from __future__ import annotations

from ..record import Record

STALL_FACTOR = 3.0     # this many times the peers' median span ...
STALL_MIN_S = 0.5      # ... and at least this much longer: not scheduling noise


def _median(values: list[int]) -> int:
    s = sorted(values)
    return s[(len(s) - 1) // 2]     # nearest-rank (docs/definitions.md), the lower middle


def flag_stalls(records: list[Record]) -> list[Record]:
    """Mark the records of one phase that stalled against their peers; those marked."""
    timed = [r for r in records if r.status == "ok" and r.end_ns and r.t0_ns]
    if len(timed) < 2:
        return []
    flagged = []
    for r in timed:
        # peers: the same task's slots (a [[concurrent]] group's tasks differ in length)
        peers = [p.end_ns - p.t0_ns for p in timed if p is not r and p.task == r.task]
        if not peers:
            continue
        typical = max(_median(peers), 0)
        span = r.end_ns - r.t0_ns
        excess = span - typical
        if span > STALL_FACTOR * typical and excess > STALL_MIN_S * 1e9:
            r.metrics["stall_s"] = round(excess / 1e9, 6)
            flagged.append(r)
    return flagged


def stall_text(r: Record) -> str:
    return (f"task {r.task} phase {r.phase}: node {r.node} slot {r.slot} ended "
            f"{r.metrics['stall_s']:.3f} s after its peers (stalled: stopped, swapped or "
            "starved?); its figures are kept, flagged with metrics.stall_s")
