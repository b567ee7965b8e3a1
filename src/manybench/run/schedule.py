"""Scheduled starts: T0 = now + a lead longer than the dispatch time measured so far.

The dispatch time of a phase is how long it took from sending "go" until the last slot
was waiting for T0 (its `armed` stamp). The lead is a multiple of the worst recent
dispatch, so a slow phase (many slots on few cores) lengthens the next lead at once and a
quiet run shortens it again.

A slot that armed after T0 was late because of the lead: the next phase's lead gains SAFETY x
what it lacked (how long after T0 the last slot armed). Beyond that one phase, the lead keeps
SAFETY x the largest lack of the last 2 / late_target phases once the rare ones the target
allows (late_target / 2 of them: one in 200 at the default 1%) are left out: a machine late
now and then keeps leads as short as it can, late armings that recur are covered while they
recur, so the share of phases whose slots arm after T0 settles under the plan's
`late_target`; and one outlier (a slot stopped for seconds) lengthens one lead, never the
hundreds after it.

A longer lead is no cure for slots that armed in time and started late (a stall, a shared
cpu: analysis/late.py): measured on a VM, long sleeps wake later. They are counted, never
a reason to lengthen the lead.
"""
from __future__ import annotations

import math
from collections import deque

from ..analysis.late import LATE_NS
from ..timebase import now_ns   # T0s are picked on the coordinator's clock

MIN_LEAD_NS = 1_000_000        # below this, one slow wake-up of a loaded box makes a slot late
MAX_LEAD_NS = 2_000_000_000
SAFETY = 2.0                   # lead = SAFETY x worst recent dispatch + MARGIN + gain
MARGIN_NS = 200_000
WINDOW = 8                     # phases of recent history
HISTORY = (50, 2_000)          # phases the late share is counted over: 2 / late_target, bounded


class Scheduler:
    """Chooses T0 for each phase from the dispatch times observed in earlier ones."""

    def __init__(self, min_lead_ns: int = MIN_LEAD_NS, late_target: float = 0.01) -> None:
        self.min_lead_ns = min_lead_ns
        self.samples: deque[int] = deque(maxlen=WINDOW)
        target = min(max(late_target, 1e-6), 1.0)
        self.recent: deque[int] = deque(maxlen=min(max(HISTORY[0], math.ceil(2 / target)),
                                                   HISTORY[1]))   # ns the lead lacked, per phase
        self.rare = int(target / 2 * self.recent.maxlen)   # late armings left uncovered
        self.gain_ns = 0.0        # what late armings added to the lead
        self.phases = 0           # phases observed
        self.late = 0             # of which a slot armed after T0 or started LATE_NS after it
        self.armed_late = 0       # of which a slot armed after T0 (the lead was too short)
        self.longest_ns = 0       # the longest lead used

    def lead_ns(self) -> int:
        worst = max(self.samples, default=5_000_000)   # before any sample: a safe 5 ms
        lead = int(SAFETY * worst + self.gain_ns) + MARGIN_NS
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
        self.samples.append(max(0, last - sent_ns))
        self.phases += 1
        lacked = max(0, last - t0_ns)
        self.recent.append(lacked)
        self.armed_late += lacked > 0
        self.late += lacked > 0 or any(s - t0_ns > LATE_NS for s in start_ns or ())
        lacks = sorted((x for x in self.recent if x), reverse=True)
        covered = lacks[self.rare] if len(lacks) > self.rare else 0   # beyond the rare ones
        self.gain_ns = min(MAX_LEAD_NS, SAFETY * max(lacked, covered))
