"""A step of the coordinator's wall clock during a run, found and told.

The coordinator's clock (timebase.py) runs on CLOCK_MONOTONIC from the run's start, so a step
of the wall clock changes no figure; it changes how every node's clock relates to the
coordinator's (a node's offset is its wall clock minus the coordinator's clock), and a reader
comparing stored times with the wall clock must know. Each phase reads the pair before its
T0 and once its results are in: a change of (wall - coordinator clock) beyond the clock
offset bound is a step, warned with its size and the phase it fell in, and the engine
re-measures its nodes' offsets before the next T0.
"""
from __future__ import annotations

from .. import timebase
from ..analysis.late import LATE_NS

# A change below this is no step: the two clocks' difference stays within 0.1 us on this
# machine (timebase.py), and a step below the lateness threshold cannot make a start late.
STEP_MIN_NS = LATE_NS


def step(bound_ns: int = 0) -> int:
    """The wall clock's step since last seen (ns; 0: none beyond max(bound_ns,
    STEP_MIN_NS)); the engines' offsets follow it once they are measured again."""
    return timebase.see_step(max(bound_ns, STEP_MIN_NS))


def step_text(step_ns: int, phase: int, task: str, during: bool) -> str:
    where = (f"during phase {phase} (task {task})" if during
             else f"before phase {phase} (task {task}), after the phase before it")
    text = (f"the coordinator's wall clock stepped by {step_ns / 1e9:+.6f} s {where}: times "
            "are kept on the run's clock (the wall clock at its start, advanced by the "
            "monotonic clock), so durations and rates are right; stored times differ from the "
            "wall clock by the step, and node clock offsets were measured again")
    if during:
        text += (f"; a slot of phase {phase} that started after the step, on a node whose "
                 "clock stepped with it, has its start and end off by the step (its duration "
                 "is right)")
    return text
