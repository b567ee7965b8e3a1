"""The nodes during the task's phases (telemetry): cpu user / system / iowait, and disk and
network bytes per second, against time since the task's first sample."""
from __future__ import annotations

from ..colunits import rate_unit
from .data import TaskData
from .style import figure

TITLE = "telemetry"


def plot(d: TaskData):
    rows = sorted(d.telemetry, key=lambda r: r.t_ns)
    if not rows:
        return None
    t0 = rows[0].t_ns
    fig, (cpu, io) = figure(f"{d.task}: nodes during its phases", rows=2)
    nodes = sorted({r.node for r in rows})
    for node in nodes:
        rs = [r for r in rows if r.node == node]
        t = [(r.t_ns - t0) / 1e9 for r in rs]
        tag = f"{node} " if len(nodes) > 1 else ""
        for attr, label in (("cpu_user_pct", "user"), ("cpu_system_pct", "system"),
                            ("cpu_iowait_pct", "iowait")):
            cpu.plot(t, [getattr(r, attr) for r in rs], lw=1, label=tag + label)
        unit, div = rate_unit(max(r.disk_read_bps, r.disk_write_bps, r.net_rx_bps,
                                  r.net_tx_bps) for r in rows)
        for attr, label in (("disk_read_bps", "disk read"), ("disk_write_bps", "disk write"),
                            ("net_rx_bps", "net rx"), ("net_tx_bps", "net tx")):
            io.plot(t, [getattr(r, attr) / div for r in rs], lw=1, label=tag + label)
    cpu.set_ylabel("cpu %")
    cpu.set_ylim(0, 100)
    io.set_ylabel(unit)
    io.set_xlabel("time (s)")
    cpu.legend(fontsize=6, ncol=3)
    io.legend(fontsize=6, ncol=2)
    return fig
