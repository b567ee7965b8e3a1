"""A slot that stalled (SIGSTOPped, swapped out, its node frozen) must not pass as plain ok.

A record is flagged when its span from T0 to its end is far longer than its peers' in the
same phase (its task's other slots): over STALL_FACTOR times their median and over STALL_MIN_S more. The span from T0
counts a late start (a slot stopped before T0 starts late) and a long run alike. The record
keeps its status (its figures are what it measured) and gains `metrics.stall_s`, the excess
over the peers' median span; the run gets a stored `straggler` warning.
"""
from __future__ import annotations

from operator import sub
from typing import Sequence

from ..status import OK_TEXT
from ..analysis.stats import median_without
from ..record import Record
from ..record_columns import RecordColumns

STALL_FACTOR = 3.0     # this many times the peers' median span ...
STALL_MIN_S = 0.5      # ... and at least this much longer: not scheduling noise


def flag_stalls(records: Sequence[Record]) -> list[Record]:
    """Mark the records of one phase that stalled against their peers; those marked. A
    phase's columns (record_columns.py) are judged a column at a time."""
    if isinstance(records, RecordColumns):
        t0s: Sequence[int] = records.column("t0_ns")
        cols = (records.column("task"), records.column("status"), records.column("end_ns"))
        return [records.record(i) for i in _stalled(*cols, t0s, records.column("metrics"))]
    return [records[i] for i in _stalled([r.task for r in records], [r.status for r in records],
                                         [r.end_ns for r in records],
                                         [r.t0_ns for r in records],
                                         [r.metrics for r in records])]


def _stalled(tasks: list[str], status: Sequence[str], ends: Sequence[int],
             t0s: Sequence[int], metrics: Sequence[dict]) -> list[int]:
    """The stalled records' places (their metrics get stall_s)."""
    n = len(status)
    if status.count(OK_TEXT) == n and 0 not in ends and 0 not in t0s:
        timed: Sequence[int] = range(n)       # the common phase: every record (C loops)
    else:
        timed = [i for i, (st, e, t) in enumerate(zip(status, ends, t0s))
                 if st == OK_TEXT and e and t]
    if len(timed) < 2:
        return []
    # peers: the same task's slots (a [[concurrent]] group's tasks differ in length); each
    # task's spans sorted once, so a phase of many slots costs a sort, not a pass per record
    spans: dict[str, list[int]] = {}
    if tasks.count(tasks[0]) == len(tasks):     # one task (a C loop): its spans at once
        spans[tasks[0]] = (list(map(sub, ends, t0s)) if len(timed) == n
                           else [ends[i] - t0s[i] for i in timed])
    else:
        for i in timed:
            spans.setdefault(tasks[i], []).append(ends[i] - t0s[i])
    for s in spans.values():
        s.sort()
    if not any(_may_stall(s) for s in spans.values()):
        return []       # the common phase: no span is far enough past its peers to check
    flagged = []
    for i in timed:
        s = spans[tasks[i]]
        if len(s) < 2:
            continue
        span = ends[i] - t0s[i]
        typical = max(median_without(s, span), 0)
        excess = span - typical
        if span > STALL_FACTOR * typical and excess > STALL_MIN_S * 1e9:
            metrics[i]["stall_s"] = round(excess / 1e9, 6)
            flagged.append(i)
    return flagged


def _may_stall(spans: list[int]) -> bool:
    """Whether the longest of a task's sorted spans may be flagged: a peer median
    (median_without) is never below spans[(n - 2) // 2] (one span left out), so the longest
    passing neither test against that bound passes neither against its own peers' median (a
    phase of 64,000 slots is then judged in one sort, not a median per record)."""
    if len(spans) < 2:
        return False
    low, top = max(spans[(len(spans) - 2) // 2], 0), spans[-1]
    return top > STALL_FACTOR * low and top - low > STALL_MIN_S * 1e9


def stall_texts(flagged: Sequence[Record]) -> list[tuple[str, str, int, str]]:
    """One warning per task and phase of the flagged records (a node's 64 slots, or a
    thousand nodes late at once, are one event to tell, not a line each): (node, or "" for
    several, task, phase, text). Every record keeps its own metrics.stall_s."""
    by: dict[tuple[str, int], list[Record]] = {}
    for r in flagged:
        by.setdefault((r.task, r.phase), []).append(r)
    out = []
    for (task, phase), rs in by.items():
        nodes = list(dict.fromkeys(r.node for r in rs))
        if len(rs) == 1:
            out.append((rs[0].node, task, phase, stall_text(rs[0])))
            continue
        shown = ", ".join(nodes[:4]) + (f" and {len(nodes) - 4} more" if len(nodes) > 4 else "")
        lo = min(r.metrics["stall_s"] for r in rs)
        hi = max(r.metrics["stall_s"] for r in rs)
        out.append((nodes[0] if len(nodes) == 1 else "", task, phase,
                    f"task {task} phase {phase}: {len(rs)} slots on {len(nodes)} "
                    f"node{'s' if len(nodes) > 1 else ''} ({shown}) ended {lo:.3f}-{hi:.3f} s "
                    "after their peers (stalled: stopped, swapped or starved?); their "
                    "figures are kept, flagged with metrics.stall_s"))
    return out


def stall_text(r: Record) -> str:
    return (f"task {r.task} phase {r.phase}: node {r.node} slot {r.slot} ended "
            f"{r.metrics['stall_s']:.3f} s after its peers (stalled: stopped, swapped or "
            "starved?); its figures are kept, flagged with metrics.stall_s")
