"""The nodes during the task's phases and their prepares (telemetry): cpu user / system /
iowait, and disk and network bytes per second, against time since the task's first row.

Each row is drawn over the interval it covers (a step from its start to its end: a row is a
rate over an interval, not a reading at an instant). The phases' timed windows (first start
to last end of their ok records, analysis/phase_figures.py) are shaded: what lies outside them
is a prepare, a commit or a setup (node/telemetry.py's rows between phases), not the phase.
"""
from __future__ import annotations

import math

from ...node.wire_types import TelemetryRow
from ..colunits import rate_unit
from .data import TaskData
from .style import figure

TITLE = "telemetry"
SHADE = {"color": "tab:green", "alpha": 0.18, "lw": 0}


def origin(d: TaskData) -> int | None:
    """The figure's time 0 (ns): its first row's start."""
    return min((r.t_ns - round(r.interval_s * 1e9) for r in d.telemetry), default=None)


def windows(d: TaskData, t0: int) -> list[tuple[float, float]]:
    """The task's phases' timed windows, in seconds since t0, in time order."""
    return sorted(((a - t0) / 1e9, (b - t0) / 1e9) for a, b in d.windows())


def steps(rows: list[TelemetryRow], t0: int, value) -> tuple[list[float], list[float]]:
    """Each row as a flat step over its interval; a gap between rows breaks the line."""
    xs: list[float] = []
    ys: list[float] = []
    for r in rows:
        end = (r.t_ns - t0) / 1e9
        start = end - r.interval_s
        if xs and start > xs[-1] + 1e-3:
            xs.append(math.nan)
            ys.append(math.nan)
        v = value(r)
        xs += [start, end]
        ys += [v, v]
    return xs, ys


def plot(d: TaskData):
    rows = sorted(d.telemetry, key=lambda r: r.t_ns)
    if not rows:
        return None
    t0 = origin(d)
    fig, (cpu, io) = figure(f"{d.task}: nodes during its phases (shaded) and their prepares",
                            rows=2)
    for i, (a, b) in enumerate(windows(d, t0)):
        for ax in (cpu, io):
            ax.axvspan(a, b, **SHADE, label="timed windows" if i == 0 and ax is io else None)
    nodes = sorted({r.node for r in rows})
    unit, div = rate_unit(max(r.disk_read_bps, r.disk_write_bps, r.net_rx_bps,
                              r.net_tx_bps) for r in rows)
    for node in nodes:
        rs = [r for r in rows if r.node == node]
        tag = f"{node} " if len(nodes) > 1 else ""
        for attr, label in (("cpu_user_pct", "user"), ("cpu_system_pct", "system"),
                            ("cpu_iowait_pct", "iowait")):
            cpu.plot(*steps(rs, t0, lambda r, a=attr: getattr(r, a)), lw=1, label=tag + label)
        for attr, label in (("disk_read_bps", "disk read"), ("disk_write_bps", "disk write"),
                            ("net_rx_bps", "net rx"), ("net_tx_bps", "net tx")):
            io.plot(*steps(rs, t0, lambda r, a=attr: getattr(r, a) / div), lw=1,
                    label=tag + label)
    cpu.set_ylabel("cpu %")
    cpu.set_ylim(0, 100)
    io.set_ylabel(unit)
    # a long run's rows are merged for the figure (telemetry_rows.py): said where it is read
    io.set_xlabel("time (s)" + (f"; each step the mean of up to {d.telemetry_merged} rows"
                                if d.telemetry_merged > 1 else ""))
    cpu.legend(fontsize=6, ncol=3)
    io.legend(fontsize=6, ncol=3)
    return fig
