"""A slot's progress sampler: a thread that reads the C loop's progress counter at a fixed
interval while the timed call runs (issue 10, item 3).

The timed loop only stores its running total in one shared word (native.h NB_PROGRESS); this
thread, asleep between samples, reads it with a CLOCK_REALTIME stamp at T0 + k x interval.
The C call holds no GIL, so the thread runs beside it; on a slot's own core it costs a wake-up
per interval. Stamps are in this node's clock: engines/base.py moves them.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from .. import _native


class Sampler:
    def __init__(self, interval_s: float, t0_ns: int,
                 read: Callable[[], int] = _native.progress,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.interval_ns = max(1, round(interval_s * 1e9))
        self.t0_ns, self.read, self.clock = t0_ns, read, clock
        self.samples: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mb-sampler", daemon=True)
        self._base = 0      # a kernel that makes several timed calls resets the counter
        self._last = 0

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        k = 1
        while True:
            due = self.t0_ns + k * self.interval_ns
            wait = (due - self.clock()) / 1e9
            if wait > 0 and self._stop.wait(wait):
                return
            if self._stop.is_set():
                return
            v = self.read()
            if v < self._last:          # a new timed call began: carry the total over
                self._base += self._last
            self._last = v
            self.samples.append((self.clock(), float(self._base + v)))
            now = self.clock()
            k = max(k + 1, (now - self.t0_ns) // self.interval_ns + 1)   # skip missed ticks

    def stop(self, end_ns: int = 0, total: float | None = None) -> list[tuple[int, float]]:
        """Stop and return the samples; with end_ns and total, the exact last one at the end
        (samples stamped after it, while the call was returning, are dropped)."""
        self._stop.set()
        self._thread.join()
        out = self.samples
        if end_ns:
            out = [s for s in out if s[0] < end_ns]
            if total is not None:
                out.append((end_ns, float(total)))
        return out
