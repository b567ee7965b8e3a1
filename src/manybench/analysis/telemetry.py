"""Nodes' telemetry summarised per point: what the machine did during the point's phases
(rows marked with one of its phases' ids, warm-up phases left out). Medians over those rows,
nearest rank (stats.py); memory as the largest level seen."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..node.wire_types import TelemetryRow
from .stats import median


@dataclass(frozen=True)
class TelemetrySummary:
    rows: int                   # telemetry rows taken during the point's phases
    nodes: int
    cpu_user_pct: float         # medians over the rows
    cpu_system_pct: float
    cpu_iowait_pct: float
    disk_busy_pct: float
    disk_read_bps: float
    disk_write_bps: float
    net_rx_bps: float
    net_tx_bps: float
    mem_used_bytes: int         # the largest level seen
    mem_cached_bytes: int

    @classmethod
    def of(cls, rows: list[TelemetryRow]) -> TelemetrySummary | None:
        if not rows:
            return None
        med = lambda name: median([getattr(r, name) for r in rows])   # noqa: E731
        return cls(len(rows), len({r.node for r in rows}), med("cpu_user_pct"),
                   med("cpu_system_pct"), med("cpu_iowait_pct"), med("disk_busy_pct"),
                   med("disk_read_bps"), med("disk_write_bps"), med("net_rx_bps"),
                   med("net_tx_bps"), max(r.mem_used_bytes for r in rows),
                   max(r.mem_cached_bytes for r in rows))


def by_phase(rows: Iterable[TelemetryRow]) -> dict[int, list[TelemetryRow]]:
    out: dict[int, list[TelemetryRow]] = {}
    for r in rows:
        if r.phase_id is not None:
            out.setdefault(r.phase_id, []).append(r)
    return out
