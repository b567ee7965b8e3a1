"""A slot that stalled (SIGSTOPped, swapped out, its node frozen) must not pass as plain ok.

A record is flagged when its span from T0 to its end is far longer than its peers' in the
same phase (its task's other slots): over STALL_FACTOR times their median and over STALL_MIN_S more. The span from T0
counts a late start (a slot stopped before T0 starts late) and a long run alike. The record
keeps its status (its figures are what it measured) and gains `metrics.stall_s`, the excess
over the peers' median span; the run gets a stored `stall` warning.
"""
from __future__ import annotations

from bisect import bisect_left

from ..record import Record

STALL_FACTOR = 3.0     # this many times the peers' median span ...
STALL_MIN_S = 0.5      # ... and at least this much longer: not scheduling noise


def flag_stalls(records: list[Record]) -> list[Record]:
    """Mark the records of one phase that stalled against their peers; those marked."""
    timed = [r for r in records if r.status == "ok" and r.end_ns and r.t0_ns]
    if len(timed) < 2:
        return []
    # peers: the same task's slots (a [[concurrent]] group's tasks differ in length); each
    # task's spans sorted once, so a phase of many slots costs a sort, not a pass per record
    spans: dict[str, list[int]] = {}
    for r in timed:
        spans.setdefault(r.task, []).append(r.end_ns - r.t0_ns)
    for s in spans.values():
        s.sort()
    flagged = []
    for r in timed:
        s = spans[r.task]
        if len(s) < 2:
            continue
        span = r.end_ns - r.t0_ns
        typical = max(_peer_median(s, span), 0)
        excess = span - typical
        if span > STALL_FACTOR * typical and excess > STALL_MIN_S * 1e9:
            r.metrics["stall_s"] = round(excess / 1e9, 6)
            flagged.append(r)
    return flagged


def _peer_median(spans: list[int], own: int) -> int:
    """The nearest-rank median (docs/definitions.md: the lower middle) of sorted `spans`
    without one occurrence of `own`."""
    k = bisect_left(spans, own)
    m = (len(spans) - 2) // 2
    return spans[m] if m < k else spans[m + 1]


def stall_text(r: Record) -> str:
    return (f"task {r.task} phase {r.phase}: node {r.node} slot {r.slot} ended "
            f"{r.metrics['stall_s']:.3f} s after its peers (stalled: stopped, swapped or "
            "starved?); its figures are kept, flagged with metrics.stall_s")
