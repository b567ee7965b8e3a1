"""A node's telemetry (issue 10, item 4): cpu user/system/iowait, memory used and cached, disk
bytes and busy time, network bytes, read at the plan's `telemetry` interval (cpu and memory
with psutil; disks and network from one read each of /proc/diskstats and /proc/net/dev, the
same counts psutil gives at a fraction of its cost).

No thread: the agent takes a reading when it is awake anyway, polling its slots during a
phase (every 0.2-0.5 s) or waiting for them to prepare, once the interval has passed and
never between go and GUARD_NS after T0, while slots wait and start (a reading costs about
0.1 ms of cpu). Rates are deltas over the interval since the previous reading. Stamps are
this node's CLOCK_REALTIME: engines/base.py moves them into the coordinator's clock.

A row says the phase that ran on the node (phase_id), or none: between phases, while the
next one is prepared (files laid out or removed, a launcher started), committed or set up.
A prepare, or a phase, long enough to have been read during it ends with a reading whether
due or not (boundary), so that no row holds both a prepare and a phase: a prepare's I/O was
the first row of the phase after it. A shorter one (under the interval) takes none: at most
an interval of it is in the next row, and a run of short phases is read no more often.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

from .wire_types import TelemetryRow

GUARD_NS = 20_000_000     # no reading from go until 20 ms after T0: the slots are starting
# a boundary reading needs this much since the last (the plan's shortest interval): rows of
# a few ms would be rates of nothing
BOUNDARY_NS = 10_000_000


@dataclass
class _Counters:
    t_ns: int
    cpu: Any            # psutil.cpu_times()
    disk_read: int
    disk_write: int
    busy_ms: dict[str, int]
    rx: int
    tx: int


_WHOLE: dict[str, bool] = {}     # disk name -> a whole disk (not a partition), asked once
SECTOR = 512                     # /proc/diskstats counts 512-byte sectors (psutil's unit too)


def _whole(name: str) -> bool:
    """A whole disk, as psutil's totals count them: one with its own /sys/block entry."""
    got = _WHOLE.get(name)
    if got is None:
        got = _WHOLE[name] = os.path.exists(f"/sys/block/{name.replace('/', '!')}")
    return got


def _disks() -> tuple[int, int, dict[str, int]]:
    """Bytes read and written by whole disks (partitions would count them twice) and each
    disk's busy time (ms), from one read of /proc/diskstats: psutil reads it twice for this
    and costs several times more (a reading is taken every second on every node)."""
    r = w = 0
    busy: dict[str, int] = {}
    try:
        with open("/proc/diskstats") as f:
            lines = f.read().splitlines()
    except OSError:
        return 0, 0, busy
    for line in lines:
        x = line.split()
        if len(x) < 14:          # a partition's short line (old kernels): no busy time
            continue
        busy[x[2]] = int(x[12])
        if _whole(x[2]):
            r += int(x[5]) * SECTOR
            w += int(x[9]) * SECTOR
    return r, w, busy


def _net() -> tuple[int, int]:
    """Bytes received and sent by every interface but loopback (the machine talking to
    itself), from /proc/net/dev."""
    rx = tx = 0
    try:
        with open("/proc/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return 0, 0
    for line in lines:
        nic, _, counts = line.partition(":")
        x = counts.split()
        if nic.strip() != "lo" and len(x) >= 9:
            rx, tx = rx + int(x[0]), tx + int(x[8])
    return rx, tx


def read_counters() -> _Counters:
    r, w, busy = _disks()
    rx, tx = _net()
    return _Counters(time.time_ns(), psutil.cpu_times(), r, w, busy, rx, tx)


def _pct(part: float, whole: float) -> float:
    return min(100.0, max(0.0, 100.0 * part / whole)) if whole > 0 else 0.0


def row_between(node: str, a: _Counters, b: _Counters, phase_id: int | None) -> TelemetryRow:
    """The interval from reading a to reading b as one row (memory: levels at b)."""
    dt = max(1e-9, (b.t_ns - a.t_ns) / 1e9)
    ca, cb = a.cpu, b.cpu
    total = sum(cb) - sum(ca)
    user = (cb.user - ca.user) + (getattr(cb, "nice", 0) - getattr(ca, "nice", 0))
    busy = max((b.busy_ms.get(d, 0) - a.busy_ms.get(d, 0) for d in b.busy_ms), default=0)
    mem = psutil.virtual_memory()
    return TelemetryRow(
        run="", node=node, t_ns=b.t_ns, interval_s=dt, phase_id=phase_id,
        cpu_user_pct=_pct(user, total), cpu_system_pct=_pct(cb.system - ca.system, total),
        cpu_iowait_pct=_pct(getattr(cb, "iowait", 0) - getattr(ca, "iowait", 0), total),
        mem_used_bytes=int(mem.used), mem_cached_bytes=int(getattr(mem, "cached", 0)),
        disk_read_bps=(b.disk_read - a.disk_read) / dt,
        disk_write_bps=(b.disk_write - a.disk_write) / dt,
        disk_busy_pct=min(100.0, _pct(busy / 1e3, dt)),
        net_rx_bps=(b.rx - a.rx) / dt, net_tx_bps=(b.tx - a.tx) / dt)


class Telemetry:
    """Readings of this node at `interval_s` (0: none), kept until drained."""

    def __init__(self, node: str, interval_s: float) -> None:
        self.node, self.interval_ns = node, round(interval_s * 1e9)
        self.rows: list[TelemetryRow] = []
        self.last: _Counters | None = read_counters() if self.interval_ns > 0 else None

    def tick(self, phase_id: int | None, t0_ns: int = 0) -> None:
        """Take a reading if one is due (and the slots are not starting)."""
        if self.last is None:
            return
        now = time.time_ns()
        if now - self.last.t_ns < self.interval_ns or (t0_ns and now - t0_ns < GUARD_NS):
            return
        cur = read_counters()
        self.rows.append(row_between(self.node, self.last, cur, phase_id))
        self.last = cur

    def boundary(self, phase_id: int | None, since_ns: int) -> None:
        """The end of a prepare or a phase that began at since_ns (this node's clock): a
        reading now, due or not, when one was taken since it began (not within BOUNDARY_NS
        of it), so that its last row, marked phase_id, ends with it; else one if due,
        marked as between phases (it holds time before since_ns)."""
        if self.last is None:
            return
        now = time.time_ns()
        if self.last.t_ns >= since_ns and now - self.last.t_ns >= BOUNDARY_NS:
            cur = read_counters()
            self.rows.append(row_between(self.node, self.last, cur, phase_id))
            self.last = cur
        else:
            self.tick(None)

    def drain(self) -> list[TelemetryRow]:
        out, self.rows = self.rows, []
        return out
