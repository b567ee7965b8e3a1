"""The cyclic garbage collector paused while a phase's records are made and stored: a stated
choice, `run.gc_pause` (config/manybench.yaml, true by default). False, nothing here touches
the collector (a program that embeds manybench and manages it itself).

A phase at 1,000 nodes x 64 slots makes ~200,000 containers (each record's metrics and extra,
its row) that form no cycles and live until the phase is committed. With the collector on,
their allocation alone starts ~650 collections a phase, each walking what survived the last
ones. Paused, they are walked once, at the next collection after it resumes. Reference
counting frees everything as usual meanwhile. The coordinator's phase loop goes further
(PhaseCollector): not walked at all.

What it buys (benchmarks/bench_gc_pause.py: the coordinator's record path, records_path.py
with the PhaseCollector as the coordinator drives it; CPU time of the process per phase,
pause on / off, median of 7 alternated pairs with its 98% interval; 2-cpu EPYC VM shared
with other work, load 8-13, 2026-11-27):
  1,000 nodes x 64 slots  0.75 [0.66, 0.88]  (12.5 against 16.8 us per record; ~650
                                              collections a phase off, none on)
  64 x 64                 0.86 [0.78, 0.92]  (8.3 against 10.0 us per record; ~35 a phase)
  1 x 2 (a local run)     1.00 [0.99, 1.03]  (nothing to spare: ~1 collection in 400 phases)
So it matters at scale only, where it is a quarter of the coordinator's record path.

The collector is process-wide: whoever embeds manybench gets it back as it was found. It is
never left off nor anything frozen once a run returns, however it ends (an error, Ctrl-C, a
phase cut short): each pause is undone in a `finally`, and each step records what it did
before it does it, so a signal between the two cannot leave it off or frozen unrecorded
(tests/run/test_phase_collector.py). A collector someone else turned off stays off and is
never frozen into; objects someone else froze stay frozen (gc.unfreeze thaws every frozen
object: manybench then freezes nothing of its own).
"""
from __future__ import annotations

import functools
import gc
import time
from typing import Any, Callable, TypeVar

from .config import switch, timing

F = TypeVar("F", bound=Callable[..., Any])


def gc_paused(fn: F) -> F:
    """fn with the collector off while it runs (left as it was found: nesting is free; with
    run.gc_pause false, untouched)."""
    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not switch("run.gc_pause") or not gc.isenabled():
            return fn(*args, **kwargs)
        try:        # disabled inside: a signal right after it still reaches the finally
            gc.disable()
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return paused  # type: ignore[return-value]


class PhaseCollector:
    """The collector around one phase on the coordinator. Its nodes' replies, decoded as they
    come, and the records made of them all live until the phase is committed (during the
    next phase's lead): walked by every young collection meanwhile, they cost ~60 ms a phase
    at 1,000 nodes x 64 slots. So the collector is off from the go until the records are
    made, and those are then frozen (gc.freeze: left out of every collection) until their
    commit thaws them. A long phase (minutes) turns it back on run.gc_long after its T0, so what
    the process makes meanwhile (the Dask client's own) is collected as usual; nothing is
    ever left frozen past the next commit. Phase after short phase, the young collections
    that would move cycles made meanwhile (by any thread) to where a full collection finds
    them may never come: a full collection every run.gc_full bounds them. With run.gc_pause
    false (read once, at the run's start) every method does nothing."""

    def __init__(self) -> None:
        self.on = switch("run.gc_pause")
        self.until: float | None = None    # while this holds the collector off: until when
        self.frozen = False
        self.full_at = time.monotonic() + timing("run.gc_full") if self.on else 0.0

    def pause(self, lead_s: float) -> None:
        """The go is about to be sent, lead_s before T0."""
        if self.on and gc.isenabled():
            self.until = time.monotonic() + max(lead_s, 0.0) + timing("run.gc_long")
            gc.disable()

    def waiting(self) -> None:
        """Still waiting for replies: the collector back on once the phase is long."""
        if self.until is not None and time.monotonic() > self.until:
            self.resume()

    def resume(self) -> None:
        """The collector as it was before pause (idempotent; on any way out)."""
        if self.until is not None:
            gc.enable()
            self.until = None

    def freeze(self) -> None:
        """The phase's records are made: frozen until committed, the collector back on. Not
        when the collector was off before pause (its owner's choice: no collection to spare
        them) nor when objects are frozen already by someone else (unfreeze would thaw them)."""
        self.resume()
        if self.on and gc.isenabled() and (self.frozen or gc.get_freeze_count() == 0):
            self.frozen = True
            gc.freeze()

    def unfreeze(self) -> None:
        """The records frozen are committed (or dropped): walked again like any object."""
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
            if time.monotonic() > self.full_at:
                gc.collect()
                self.full_at = time.monotonic() + timing("run.gc_full")

    def release(self) -> None:
        """The run is over, however it ended: the collector as it was found, nothing frozen."""
        self.resume()
        self.unfreeze()
