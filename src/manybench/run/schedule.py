"""Scheduled starts: T0 = now + a lead longer than the dispatch time measured so far.

The dispatch time of a phase is how long it took from sending "go" until the last slot
was waiting for T0 (its `armed` stamp). The lead is a multiple of the worst recent
dispatch, so a slow phase (many slots on few cores) lengthens the next lead at once and a
quiet run shortens it again.

A slot that armed after T0 was late because of the lead: the next phase's lead gains SAFETY x
what it lacked (how long after T0 the last slot armed), and that cover halves with every phase
after it, so one late arming costs a few long leads, never the hundreds after it (a 1 s cover
is under 0.1 ms 14 phases later). Late armings that recur are covered while they recur: the
lead keeps SAFETY x the largest lack of the last 4 / late_target phases once the rare ones
the target allows (late_target / 2 of them: two in 400 at the default 1%) are left out, so
the share of phases whose slots arm after T0 settles under the plan's `late_target`.

What the node's noise explains is not chased (inventory/noise.py: each node measures at the
run's start how long its cpus are taken away, `stall_ns`; under other load, tens to hundreds
of ms; load that came later shows as slots that armed in time and still started late: the
latest of the last WOKE phases is the floor when longer): a phase whose dispatch was over
STALL_FACTOR x the recent ones' median, and over it by no more than that floor, was stalled,
not slower. Its dispatch does not hold
the lead long for the next WINDOW phases and its lack never enters the long memory above:
only the halving cover answers it (stalls come in runs on a busy machine, and a dispatch that
grew 3-fold looks like one until the median follows it). Such a stall costs the lateness it
caused (counted; a `stalls` warning at the run's end says how many), where a lead long
enough for every stall costs every phase its length.

A longer lead is no cure for slots that armed in time and started late (a stall, a shared
cpu: analysis/late.py): measured on a VM, long sleeps wake later. They are counted, never
a reason to lengthen the lead.
"""
from __future__ import annotations

import math
import statistics
from collections import deque

from ..analysis.late import LATE_NS
from ..timebase import now_ns   # T0s are picked on the coordinator's clock

MIN_LEAD_NS = 1_000_000        # below this, one slow wake-up of a loaded box makes a slot late
MAX_LEAD_NS = 2_000_000_000
SAFETY = 2.0                   # lead = SAFETY x worst recent dispatch + MARGIN + gain
MARGIN_NS = 200_000
WINDOW = 8                     # phases of recent history
DECAY = 0.5                    # what a late arming's cover keeps of itself each phase after
RECUR = 4                      # the long memory: RECUR / late_target phases ...
HISTORY = (50, 2_000)          # ... bounded so
STALL_FACTOR = 3.0             # a dispatch this many times the recent median was stalled
WOKE = 100                     # phases whose in-time slots' wake-ups give the live floor


class Scheduler:
    """Chooses T0 for each phase from the dispatch times observed in earlier ones."""

    def __init__(self, min_lead_ns: int = MIN_LEAD_NS, late_target: float = 0.01,
                 floor_ns: int = 0) -> None:
        self.min_lead_ns = min_lead_ns
        self.floor_ns = floor_ns  # the nodes' worst noise floor (0: not measured)
        self.samples: deque[int] = deque(maxlen=WINDOW)   # the last phases' dispatch times
        self.counted: deque[int] = deque(maxlen=WINDOW)   # the same, 0 where the noise explains it
        target = min(max(late_target, 1e-6), 1.0)
        self.recent: deque[int] = deque(maxlen=min(max(HISTORY[0], math.ceil(RECUR / target)),
                                                   HISTORY[1]))   # ns the lead lacked, per phase
        self.rare = int(target / 2 * self.recent.maxlen)   # late armings left uncovered
        self.cover_ns = 0.0       # the last late armings' cover, halving
        self.gain_ns = 0.0        # what late armings added to the lead
        self.phases = 0           # phases observed
        self.late = 0             # of which a slot armed after T0 or started LATE_NS after it
        self.armed_late = 0       # of which a slot armed after T0 (the lead was too short)
        self.explained = 0        # of those, stalls the noise floor explains (not chased)
        self.explained_ns = 0     # the longest lack of those
        self.woke: deque[int] = deque(maxlen=WOKE)   # how late slots that armed in time started
        self.longest_ns = 0       # the longest lead used

    def hint(self, dispatch_ns: int) -> None:
        """A first guess of the dispatch time, before any go was timed."""
        self.samples.append(dispatch_ns)
        self.counted.append(dispatch_ns)

    def lead_ns(self) -> int:
        worst = max(self.counted, default=5_000_000)   # before any sample: a safe 5 ms
        lead = int(SAFETY * worst + self.gain_ns) + MARGIN_NS
        return max(self.min_lead_ns, min(MAX_LEAD_NS, lead))

    def next_t0(self, now: int | None = None) -> int:
        lead = self.lead_ns()
        self.longest_ns = max(self.longest_ns, lead)
        return (now_ns() if now is None else now) + lead

    def floor(self) -> int:
        """The noise floor now: the one measured at the start, or, when load came since,
        how late slots that armed in time started in the last WOKE phases (the node took
        their cpu as long: the same stalls, live)."""
        return max(self.floor_ns, max(self.woke, default=0))

    def stalled(self, dispatch_ns: int) -> bool:
        """Whether the nodes' noise explains this dispatch: far over the recent ones, by no
        more than the floor (a stall there, not a slower dispatch)."""
        floor = self.floor()
        if not floor or not self.samples:
            return False
        typical = statistics.median(self.samples)
        return dispatch_ns > STALL_FACTOR * typical and dispatch_ns - typical <= floor

    def observe(self, sent_ns: int, t0_ns: int, armed_ns: list[int],
                start_ns: list[int] | None = None) -> None:
        """Record one phase: when go was sent, its T0, when each slot armed and started."""
        if not armed_ns:
            return
        last = max(armed_ns)
        dispatch = max(0, last - sent_ns)
        noise = self.stalled(dispatch)
        self.samples.append(dispatch)
        self.counted.append(0 if noise else dispatch)
        self.phases += 1
        lacked = max(0, last - t0_ns)
        self.recent.append(0 if noise else lacked)
        self.armed_late += lacked > 0
        if noise and lacked:
            self.explained += 1
            self.explained_ns = max(self.explained_ns, lacked)
        self.late += lacked > 0 or any(s - t0_ns > LATE_NS for s in start_ns or ())
        if not lacked and start_ns:
            self.woke.append(max(0, max(start_ns) - t0_ns))
        lacks = sorted((x for x in self.recent if x), reverse=True)
        covered = lacks[self.rare] if len(lacks) > self.rare else 0   # beyond the rare ones
        self.cover_ns = max(DECAY * self.cover_ns, SAFETY * lacked)
        self.gain_ns = min(MAX_LEAD_NS, max(self.cover_ns, SAFETY * covered))

    def unchased(self) -> str | None:
        """The run's word on the late armings it left to the noise floor (None: none)."""
        if not self.explained:
            return None
        return (f"{self.explained} of {self.phases} phases armed late (by up to "
                f"{self.explained_ns / 1e6:.3g} ms) because their go stalled within the nodes' "
                f"noise floor (stalls up to {self.floor_ns / 1e6:.3g} ms at the start; slots "
                f"that armed in time woke up to {max(self.woke, default=0) / 1e6:.3g} ms late "
                "lately): counted as late starts, not chased with a longer lead for every phase")
