"""The coordinator's clock, read here and nowhere else: the wall clock as it read when the
run began, advanced by CLOCK_MONOTONIC from then on.

Every instant the coordinator picks or stores (T0, when a go was sent, when a node answered,
the run's start and end, a warning's time) comes from now_ns(), so a step of the wall clock
during a run (date -s, a VM's clock jump, NTP stepping) moves none of them: durations, phase
spans and rates stay right and T0s stay in order. The wall clock is still read, paired with
the monotonic clock (read_pair); a change in their difference is a step (see_step: the
coordinator looks every phase and warns of one, run/clock_steps.py). On Linux the two differ by steps only: NTP's
slewing moves both alike (measured on a 2-cpu VM: their difference stayed within 0.1 us over
5 s, idle and with both cpus busy).

Nodes keep their own wall clocks: a node's offset is its clock minus this one, so what
Cristian's echo measures against the wall clock gets stepped_ns() added (engines: the steps
seen, 0 until one is), and engines/base.py converts T0 and stamps with it, as for any offset.
"""
from __future__ import annotations

import time

# the clocks, read through these names: a test stands in for the wall clock here (a step)
_wall = time.time_ns
_mono = time.monotonic_ns

_anchor: tuple[int, int] | None = None     # (wall, monotonic) when the run began
_stepped = 0            # the wall clock minus this clock as last seen (see_step): its steps


def read_pair(tries: int = 3) -> tuple[int, int, int]:
    """(wall, monotonic, spread): a wall clock read and the monotonic instant it was taken
    at, the tightest of a few brackets (a read preempted between the clocks is not kept);
    spread: the bracket's width (ns), the pair's own uncertainty."""
    best = None
    for _ in range(tries):
        m1 = _mono()
        w = _wall()
        m2 = _mono()
        if best is None or m2 - m1 < best[2]:
            best = (w, (m1 + m2) // 2, m2 - m1)
    return best


def anchor() -> None:
    """Begin the coordinator's clock at the wall clock's reading now (a run's start)."""
    global _anchor, _stepped
    w, m, _ = read_pair()
    _anchor, _stepped = (w, m), 0


def _anchored() -> tuple[int, int]:
    if _anchor is None:
        anchor()
    return _anchor


def now_ns() -> int:
    """Now on the coordinator's clock (ns since the epoch)."""
    w0, m0 = _anchored()
    return w0 + _mono() - m0


def of_mono(mono_ns: int) -> int:
    """A CLOCK_MONOTONIC instant of this process on the coordinator's clock."""
    w0, m0 = _anchored()
    return w0 + mono_ns - m0


def wall_offset_ns() -> int:
    """The wall clock minus the coordinator's clock now, as read: within a read's jitter of
    0 until the wall clock steps, then of the sum of its steps since the run began."""
    w0, m0 = _anchored()
    w, m, _ = read_pair()
    return w - (w0 + m - m0)


def see_step(bound_ns: int) -> int:
    """The wall clock's step since last seen, when it exceeds bound_ns (else 0); a step seen
    joins stepped_ns()."""
    global _stepped
    step = wall_offset_ns() - _stepped
    if abs(step) <= bound_ns:
        return 0
    _stepped += step
    return step


def stepped_ns() -> int:
    """The wall clock minus the coordinator's clock, by the steps seen (0 until one is)."""
    return _stepped
