"""The telemetry rows each task's figure draws (plots/telemetry.py), in memory that does not
grow with the run: a run of 64 nodes sampled every second for 10 hours holds 2.3 M rows,
and a figure ~1,000 pixels wide shows no more than a few thousand steps of a line.

Two passes over the run's rows (Store.telemetry_rows, a batch at a time): the first counts
each task's rows per node, the second keeps them. A task with more than FIGURE_ROWS rows has
each node's consecutive rows merged k at a time (k: the node's rows over its share of
FIGURE_ROWS) into one row over their span: each rate and cpu share the rows' mean weighted by
their intervals (the rate over the time they cover: a row is a rate over its interval),
memory the largest level. A task of fewer rows keeps its rows as stored.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Callable, Iterable

from ...node.wire_types import TelemetryRow

FIGURE_ROWS = 4_000     # rows drawn per task, at most (over all its nodes)
# the columns that are rates or shares over an interval; the others are levels (max)
_MEANS = ("cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "disk_read_bps",
          "disk_write_bps", "disk_busy_pct", "net_rx_bps", "net_tx_bps")


def merged(rows: list[TelemetryRow]) -> TelemetryRow:
    """One row over the span of a node's consecutive rows (in time order)."""
    if len(rows) == 1:
        return rows[0]
    first, last = rows[0], rows[-1]
    weights = [r.interval_s for r in rows]
    total = sum(weights)
    if total <= 0:        # no interval to weigh by: each row counts once
        weights, total = [1.0] * len(rows), float(len(rows))
    means = {name: sum(getattr(r, name) * w for r, w in zip(rows, weights)) / total
             for name in _MEANS}
    start = first.t_ns - round(first.interval_s * 1e9)
    return replace(last, interval_s=(last.t_ns - start) / 1e9,
                   mem_used_bytes=max(r.mem_used_bytes for r in rows),
                   mem_cached_bytes=max(r.mem_cached_bytes for r in rows), **means)


def by_task(rows: Iterable[TelemetryRow], task_of: Callable[[TelemetryRow], str | None]
            ) -> tuple[dict[str, list[TelemetryRow]], dict[str, int]]:
    """task -> the rows its figure draws, and task -> the most stored rows merged into one
    drawn (1: none). `rows` is iterated twice (a list, or an object whose iter reads the
    store again); `task_of`: the task a row is shown in, or None."""
    counts: Counter[tuple[str, str]] = Counter()
    for r in rows:
        t = task_of(r)
        if t is not None:
            counts[(t, r.node)] += 1
    totals: Counter[str] = Counter()
    nodes: Counter[str] = Counter()
    for (t, _), n in counts.items():
        totals[t] += n
        nodes[t] += 1
    per_node = {t: max(1, FIGURE_ROWS // nodes[t]) for t in nodes}
    k = {key: (1 if totals[key[0]] <= FIGURE_ROWS else math.ceil(n / per_node[key[0]]))
         for key, n in counts.items()}
    out: dict[str, list[TelemetryRow]] = {t: [] for t in nodes}
    pending: dict[tuple[str, str], list[TelemetryRow]] = {}
    for r in rows:
        t = task_of(r)
        if t is None:
            continue
        key = (t, r.node)
        if k.get(key, 1) == 1:       # a row the first pass did not see (a run writing) too
            out.setdefault(t, []).append(r)
            continue
        group = pending.setdefault(key, [])
        group.append(r)
        if len(group) == k[key]:
            out[t].append(merged(group))
            group.clear()
    for (t, _), group in pending.items():
        if group:
            out[t].append(merged(group))
    most = {t: max((n for key, n in k.items() if key[0] == t), default=1) for t in out}
    return out, most
