"""benchmarks/settle.py: between two I/O runs, sync and wait until write-back and the device
are idle for a while (issue 32, item 2: run order swung I/O pairs 0.2-4.7x back to back)."""
from __future__ import annotations

import os
import sys

import pytest

from suite_paths import ROOT

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import settle  # noqa: E402

MIB = 2**20


class Machine:
    """A scripted machine: each poll takes the next (Dirty, Writeback, in flight) and 1 s of a
    fake clock passes per poll."""

    def __init__(self, states):
        self.states, self.t, self.syncs = list(states), 0.0, 0

    def install(self, mp):
        mp.setattr(settle.os, "sync", self.sync)
        mp.setattr(settle, "disk_of", lambda path: "/sys/block/vdz")
        mp.setattr(settle, "meminfo", lambda: self.states[0][:2])
        mp.setattr(settle, "in_flight", lambda disk: self.states[0][2])
        mp.setattr(settle.time, "monotonic", lambda: self.t)
        mp.setattr(settle.time, "sleep", self.sleep)

    def sync(self):
        self.syncs += 1

    def sleep(self, s):
        self.t += 1.0       # a poll, or the host's wait: one step of the script either way
        if len(self.states) > 1:
            self.states.pop(0)


def test_waits_until_every_count_is_idle_for_the_quiet_span(monkeypatch):
    busy_wb, busy_dev, dirty = (0, MIB, 0), (0, 0, 3), (200 * MIB, 0, 0)
    idle = (5 * MIB, 0, 0)
    m = Machine([busy_wb, busy_dev, dirty, idle, idle, busy_dev, idle, idle, idle, idle])
    m.install(monkeypatch)
    line = settle.settle("/x", quiet=2.0, timeout=100, after=3.0)
    assert m.syncs == 1 and m.t == 9.0      # 8 polls, then the host's 3 s (one sleep here)
    assert line.startswith("settled in 8.0 s") and "Dirty 5 MiB" in line and "vdz" in line
    assert line.endswith("+ 3 s for the host")


def test_says_when_it_gave_up(monkeypatch):
    Machine([(0, 0, 1)]).install(monkeypatch)
    line = settle.settle("/x", quiet=1.0, timeout=5)
    assert line.startswith("NOT settled after 5 s") and "1 in flight" in line


def test_finds_the_disk_of_a_directory(tmp_path):
    disk = settle.disk_of(str(tmp_path))
    if disk is None:
        pytest.skip("no block device under the test's directory (tmpfs?)")
    assert settle.in_flight(disk) >= 0
    dirty, wb = settle.meminfo()
    assert dirty >= 0 and wb >= 0
