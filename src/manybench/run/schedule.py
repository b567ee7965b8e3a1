"""Scheduled starts: T0 = now + a lead longer than the dispatch time measured so far.

The dispatch time of a phase is how long it took from sending "go" until the last slot
was waiting for T0 (its `armed` stamp). The lead is a multiple of the worst recent
dispatch, so a slow phase (many slots on few cores) lengthens the next lead at once and a
quiet run shortens it again slowly. A slot that armed after T0 was late: the next lead
doubles.
"""
from __future__ import annotations

import time
from collections import deque

MIN_LEAD_NS = 1_000_000        # below this, one slow wake-up of a loaded box makes a slot late
MAX_LEAD_NS = 2_000_000_000
SAFETY = 2.0                   # lead = SAFETY x worst recent dispatch + MARGIN
MARGIN_NS = 200_000
WINDOW = 8                     # phases of history


def now_ns() -> int:
    return time.time_ns()


class Scheduler:
    """Chooses T0 for each phase from the dispatch times observed in earlier ones."""

    def __init__(self, min_lead_ns: int = MIN_LEAD_NS) -> None:
        self.min_lead_ns = min_lead_ns
        self.samples: deque[int] = deque(maxlen=WINDOW)
        self.late_boost = 1.0

    def lead_ns(self) -> int:
        worst = max(self.samples, default=5_000_000)   # before any sample: a safe 5 ms
        lead = int(SAFETY * worst * self.late_boost) + MARGIN_NS
        return max(self.min_lead_ns, min(MAX_LEAD_NS, lead))

    def next_t0(self, now: int | None = None) -> int:
        return (now_ns() if now is None else now) + self.lead_ns()

    def observe(self, sent_ns: int, t0_ns: int, armed_ns: list[int]) -> None:
        """Record one phase: when go was sent, its T0, and when each slot armed."""
        if not armed_ns:
            return
        last = max(armed_ns)
        self.samples.append(max(0, last - sent_ns))
        # a late slot doubles the next lead once; on-time phases bring it back quickly
        self.late_boost = 2.0 if last > t0_ns else max(1.0, self.late_boost * 0.5)
