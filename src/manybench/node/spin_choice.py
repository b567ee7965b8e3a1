"""Whether a slot with cpus of its own spins the last stretch before T0 or sleeps to it.

A spin (kernels/native/timing.c: clock reads in a loop from T0 - SPIN_NS) starts the work
within a clock read of T0, but only while nothing else wants the cpu: on a busy cpu it takes
up to SPIN_NS of cpu per phase from the other work, and the scheduler, sharing the cpu,
preempts the spinner, so it starts later than a sleep's wake-up would (issue 30: 2 slots
spinning on 2 busy cpus, p99 skew 17 ms; 8 sleeping, 4 ms). So placement's right to spin (a
core of its own) is used only while the slot's cpus are otherwise idle.

The evidence, read again every WINDOW_NS as the run goes (a node whose load changes): the
busy share of the slot's cpus over the window from /proc/stat (user, nice, system, irq,
softirq, steal: other tasks, interrupts and the hypervisor), less the run's own: the slot's
process with its reaped children (getrusage) and its parent, the agent or the local
coordinator (unpinned: counted as if it ran on these cpus only, so the run's own work never
makes a cpu busy). Others' share at or above BUSY: sleep; below IDLE: spin again; between
the two, as before (a cpu near one threshold does not flip every window). Until the first
window (FIRST_NS, from the slot's first phase) ends it spins, as a core of its own always did.
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Callable

from ..kernels.binding import PROC_STAT, cpu_ticks
from ..kernels.rank_link import proc_cpu_s

WINDOW_NS = 500_000_000   # /proc/stat counts in ticks (10 ms): 50 per cpu in a window
# the first window is shorter: spinning on a busy cpu makes late starts, and every one
# lengthens the coordinator's lead for the phases after it (run/schedule.py)
FIRST_NS = 100_000_000
BUSY, IDLE = 0.25, 0.10   # others' share of the slot's cpus: stop spinning / spin again


@dataclass(frozen=True)
class Reading:
    at_ns: int            # CLOCK_MONOTONIC
    busy: int             # ticks the slot's cpus were busy, summed over them
    total: int            # ticks in all (busy + idle + iowait)
    ours_s: float         # cpu seconds of the run's own: the slot, its children, its parent


def ours_s() -> float:
    """Cpu seconds of the slot (its threads, its waited-for children) and of its parent."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    parent = os.getppid()
    up = proc_cpu_s(parent) if parent > 1 else 0.0
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime + max(up, 0.0)


def read(cpus: tuple[int, ...]) -> Reading | None:
    """The evidence now; None where /proc/stat cannot be read or lacks one of the cpus."""
    try:
        with open(PROC_STAT) as f:
            got = cpu_ticks(f.read(), cpus)
    except OSError:
        return None
    return None if got is None else Reading(time.monotonic_ns(), got[0], got[1], ours_s())


def others_share(a: Reading, b: Reading, ncpus: int) -> float | None:
    """The share of the cpus' time other work took between two readings (0..1); None when
    the window holds no ticks."""
    ticks = b.total - a.total
    wall_s = (b.at_ns - a.at_ns) / 1e9 * ncpus
    if ticks <= 0 or wall_s <= 0:
        return None
    busy = (b.busy - a.busy) / ticks
    return min(1.0, max(0.0, busy - (b.ours_s - a.ours_s) / wall_s))


class SpinChoice:
    """One slot's choice, kept over its phases. `reader` stands for read() in tests."""

    def __init__(self, reader: Callable[[tuple[int, ...]], Reading | None] = read,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.reader, self.clock = reader, clock
        self.cpus: tuple[int, ...] = ()
        self.last: Reading | None = None
        self.next_ns = 0           # when the evidence is read again
        self.spin = True           # no evidence yet: spin, as a core of its own always did
        self.others: float | None = None   # others' share in the last window, when read

    def spins(self, cpus: tuple[int, ...]) -> bool:
        """Whether a slot on these cpus (its own) spins before this phase's T0."""
        t = self.clock()
        if cpus == self.cpus and t < self.next_ns:
            return self.spin      # the window is not over: nothing read (most phases)
        now = self.reader(cpus)
        if cpus != self.cpus or now is None or self.last is None:
            # other cpus (a new placement): a new window; the node's load so far is the
            # best guess until it ends, so the choice stays
            self.next_ns = t + (FIRST_NS if self.others is None else WINDOW_NS)
            self.cpus, self.last = cpus, now
            return self.spin
        self.next_ns = t + WINDOW_NS   # unreadable evidence is not tried every phase either
        share = others_share(self.last, now, len(cpus))
        self.last = now
        if share is not None:
            self.others = share
            if share >= BUSY:
                self.spin = False
            elif share < IDLE:
                self.spin = True
        return self.spin
