"""Scheduled starts: T0 = now + a lead longer than the dispatch time measured so far.

The dispatch time of a phase is how long it took from sending "go" until the last slot
was waiting for T0 (its `armed` stamp). The lead is the longer of:
  - a multiple of the worst recent dispatch (the last WINDOW phases), so a slow phase (many
    slots on few cores) lengthens the next lead at once and a quiet run shortens it again;
  - the dispatch time of the last 2 / late_target phases (200 at the default 1%) that all
    but late_target / 2 of them (1 of 200) stayed under, so a machine whose dispatch stalls
    now and then keeps a lead covering the stalls that recur: the share of phases whose slots
    arm after T0 stays under the plan's `late_target`, and one outlier (a slot stopped for
    seconds) does not lengthen the next 200 leads.
A quiet machine, never late, keeps its short lead. Slots that armed in time but started late
(a stall, a shared cpu: analysis/late.py) are counted; no lead prevents them.
"""
from __future__ import annotations

import heapq
import math
import time
from collections import deque

from ..analysis.late import LATE_NS

MIN_LEAD_NS = 1_000_000        # below this, one slow wake-up of a loaded box makes a slot late
MAX_LEAD_NS = 2_000_000_000
SAFETY = 2.0                   # lead = SAFETY x worst recent dispatch + MARGIN
MARGIN_NS = 200_000
WINDOW = 8                     # phases of recent history
HISTORY = (50, 2_000)          # phases of long history: 2 / late_target, within these bounds


def now_ns() -> int:
    return time.time_ns()


class Scheduler:
    """Chooses T0 for each phase from the dispatch times observed in earlier ones."""

    def __init__(self, min_lead_ns: int = MIN_LEAD_NS, late_target: float = 0.01) -> None:
        self.min_lead_ns = min_lead_ns
        self.samples: deque[int] = deque(maxlen=WINDOW)
        target = min(max(late_target, 1e-6), 1.0)
        self.history: deque[int] = deque(maxlen=min(max(HISTORY[0], math.ceil(2 / target)),
                                                    HISTORY[1]))
        self.spare = int(target / 2 * self.history.maxlen)   # samples the lead may leave out
        self.phases = 0           # phases observed
        self.late = 0             # of which a slot armed after T0 or started LATE_NS after it
        self.armed_late = 0       # of which a slot armed after T0 (the lead was too short)
        self.longest_ns = 0       # the longest lead used

    def lead_ns(self) -> int:
        worst = max(self.samples, default=5_000_000)   # before any sample: a safe 5 ms
        lead = int(SAFETY * worst) + MARGIN_NS
        if len(self.history) > self.spare:
            covered = heapq.nlargest(self.spare + 1, self.history)[-1]
            lead = max(lead, covered + MARGIN_NS)
        return max(self.min_lead_ns, min(MAX_LEAD_NS, lead))

    def next_t0(self, now: int | None = None) -> int:
        lead = self.lead_ns()
        self.longest_ns = max(self.longest_ns, lead)
        return (now_ns() if now is None else now) + lead

    def observe(self, sent_ns: int, t0_ns: int, armed_ns: list[int],
                start_ns: list[int] | None = None) -> None:
        """Record one phase: when go was sent, its T0, when each slot armed and started."""
        if not armed_ns:
            return
        last = max(armed_ns)
        took = max(0, last - sent_ns)
        self.samples.append(took)
        self.history.append(took)
        self.phases += 1
        late_arming = last > t0_ns
        self.armed_late += late_arming
        self.late += late_arming or any(s - t0_ns > LATE_NS for s in start_ns or ())
