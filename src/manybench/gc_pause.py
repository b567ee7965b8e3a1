"""The cyclic garbage collector paused while a phase's records are made and stored.

A phase at 1,000 nodes x 64 slots makes ~200,000 containers (each record's metrics and extra,
its row) that form no cycles and live until the phase is committed. With the collector on,
their allocation alone starts ~300 young collections a phase, each walking what survived the
last ones: 10-18% of the coordinator's record path. Paused, they are walked once, at the
next collection after it resumes. Reference counting frees everything as usual meanwhile.
The coordinator's phase loop goes further (PhaseCollector): not walked at all.
"""
from __future__ import annotations

import functools
import gc
import time
from typing import Any, Callable, TypeVar

from .config import timing

F = TypeVar("F", bound=Callable[..., Any])


def gc_paused(fn: F) -> F:
    """fn with the collector off while it runs (left as it was found: nesting is free)."""
    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
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
    them may never come: a full collection every run.gc_full bounds them."""

    def __init__(self) -> None:
        self.until: float | None = None    # while this holds the collector off: until when
        self.frozen = False
        self.full_at = time.monotonic() + timing("run.gc_full")

    def pause(self, lead_s: float) -> None:
        """The go is about to be sent, lead_s before T0."""
        if gc.isenabled():
            gc.disable()
            self.until = time.monotonic() + max(lead_s, 0.0) + timing("run.gc_long")

    def waiting(self) -> None:
        """Still waiting for replies: the collector back on once the phase is long."""
        if self.until is not None and time.monotonic() > self.until:
            self.resume()

    def resume(self) -> None:
        """The collector as it was before pause (idempotent; on any way out)."""
        if self.until is not None:
            self.until = None
            gc.enable()

    def made(self) -> None:
        """The phase's records are made: frozen until committed, the collector back on."""
        gc.freeze()
        self.frozen = True
        self.resume()

    def unfreeze(self) -> None:
        """The records frozen are committed (or dropped): walked again like any object."""
        if self.frozen:
            self.frozen = False
            gc.unfreeze()
            if time.monotonic() > self.full_at:
                gc.collect()
                self.full_at = time.monotonic() + timing("run.gc_full")
