"""Late starts, counted and explained (docs/definitions.md).

A slot started late when it armed after T0 (it began waiting for T0 only after T0 had passed:
`metrics.armed_late_ns` > 0) or when its first operation came more than LATE_NS after T0.
Each late slot gets the cause the records can show:

  lead       it armed after T0: the coordinator's lead was shorter than getting the go to the
             slot took (run/schedule.py lengthens the lead when this happens)
  busy core  it shares its cpu with another slot of the phase: slots on a shared cpu sleep
             until T0 without spinning and wake one after another
  other work it had a cpu of its own but other work kept it busy, so it slept to T0 instead
             of spinning (metrics.cpu_busy: node/spin_choice.py) and woke late
  held       its cpus were idle, but another slot of the phase on its node slept for busy
             cpus, so its spin was held and it slept too (metrics.spin_held:
             node/spin_hold.py) and woke late
  stall      it was waiting in time and on a cpu of its own, yet woke late: the machine took
             the cpu away (an interrupt, another task, the hypervisor): the node's noise
             floor (inventory/noise.py) says how long such stalls last there

A phase is late when any of its slots is. The plan's `late_target` (default 1%) is the share
of late phases the lead adapts to stay under; a run above it says so, with the causes.
"""
from __future__ import annotations

import math

from collections import Counter
from itertools import compress
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..extra_keys import ARMED_NS
from ..status import OK_TEXT
from ..kernels import figures as F
from ..record import Record
from ..units import plural

LATE_NS = 100_000          # a first operation this long after T0 is a late start
DEFAULT_TARGET = 0.01      # the plan's late_target when it gives none (plan/observe.py)
CAUSE_TEXT = {"lead": "lead too short", "busy core": "a busy core",
              "other work": "its cpu busy with other work",
              "held": "its spin held for another slot's busy cpu", "stall": "a stall"}


def armed_late_ns(r: Record) -> int:
    """How long after T0 the slot armed (0: in time or unknown)."""
    return _armed_late(r.metrics, r.extra, r.t0_ns)


def _armed_late(metrics: dict, extra: dict, t0_ns: int) -> int:
    v = metrics.get(F.ARMED_LATE.name)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return max(0, int(v))
    armed = extra.get(ARMED_NS)
    return max(0, int(armed) - t0_ns) if isinstance(armed, int) and armed else 0


def is_late(r: Record) -> bool:
    return r.status == OK_TEXT and (armed_late_ns(r) > 0 or r.start_ns - r.t0_ns > LATE_NS)


def causes(phase_records: Sequence[Record]) -> list[tuple[Record, str]]:
    """The late slots of one phase, each with its cause."""
    ok = [r for r in phase_records if r.status == OK_TEXT]
    on_cpu = Counter((r.node, r.cpu) for r in ok)
    return [(r, _cause(armed_late_ns(r), on_cpu[(r.node, r.cpu)], r.metrics))
            for r in ok if is_late(r)]


def _cause(armed_late: int, on_its_cpu: int, metrics: dict) -> str:
    """A late slot's cause (the module doc), from how late it armed, the ok slots of its
    phase on its cpu and its metrics."""
    if armed_late > 0:
        return "lead"
    if on_its_cpu > 1:
        return "busy core"
    if F.CPU_BUSY.name in metrics:
        return "other work"
    if F.SPIN_HELD.name in metrics:
        return "held"
    return "stall"


@dataclass
class LateCount:
    """Late starts over a set of phases."""
    phases: int = 0                  # phases counted (with at least one ok record)
    late_phases: int = 0
    late_slots: int = 0
    lead_phases: int = 0             # phases with a slot late for a lead too short
    worst_ns: int = 0                # the latest start after T0 among the late slots
    by_cause: Counter = field(default_factory=Counter)   # cause -> late slots

    @property
    def share(self) -> float:
        return self.late_phases / self.phases if self.phases else 0.0

    def cell(self) -> str:
        """The report's `late` cell: late phases of phases, and the causes."""
        if not self.late_phases:
            return f"0/{self.phases}"
        why = ", ".join(f"{CAUSE_TEXT[c]} {n}" for c, n in self.by_cause.most_common())
        return f"{self.late_phases}/{self.phases} ({why})"


def count(phases: Iterable[Sequence[Record]]) -> LateCount:
    """Late starts over phases, each given as its records."""
    c = LateCount()
    for recs in phases:
        if not any(r.status == OK_TEXT for r in recs):
            continue
        c.phases += 1
        late = causes(recs)
        if late:
            c.late_phases += 1
            c.late_slots += len(late)
            c.worst_ns = max(c.worst_ns, max(r.start_ns - r.t0_ns for r, _ in late))
            c.by_cause.update(cause for _, cause in late)
            c.lead_phases += any(cause == "lead" for _, cause in late)
    return c


def count_phase(status: Sequence[str], metrics: Sequence[dict], extra: Sequence[dict],
                t0_ns: Sequence[int], start_ns: Sequence[int], node: Sequence[str],
                cpu: Sequence[int]) -> LateCount:
    """count() of one phase's records given as columns, one per field, in record order: the
    same rules (is_late, causes) a column at a time, for a phase's aggregates of 64,000
    records (analysis/aggregates.py), not a function call per record."""
    c = LateCount()
    ok = [s == OK_TEXT for s in status]
    if not any(ok):
        return c
    c.phases = 1
    got = [m.get(F.ARMED_LATE.name) for m in metrics]
    if set(map(type, got)) == {int}:     # every slot said it (a node's own records do)
        armed = got
    else:
        armed = [_armed_late(m, x, t) for m, x, t in zip(metrics, extra, t0_ns)]
    # is_late's rule; looked for slot by slot only when the phase's bounds allow one
    if max(armed) <= 0 and max(start_ns) - min(t0_ns) <= LATE_NS:
        return c
    late = [i for i, (k, a, s, t) in enumerate(zip(ok, armed, start_ns, t0_ns))
            if k and (a > 0 or s - t > LATE_NS)]
    if not late:
        return c
    on_cpu = Counter(compress(zip(node, cpu), ok))
    why = [_cause(armed[i], on_cpu[(node[i], cpu[i])], metrics[i]) for i in late]
    c.late_phases, c.late_slots = 1, len(late)
    c.worst_ns = max(0, max(start_ns[i] - t0_ns[i] for i in late))
    c.by_cause.update(why)
    c.lead_phases = int("lead" in why)
    return c


def verdict(c: LateCount, target: float, floor_ns: int | None = None) -> str | None:
    """A sentence for the report when the run's late share exceeds the target, else None."""
    if not c.phases or c.share <= target:
        return None
    why = ", ".join(f"{CAUSE_TEXT[k]} {plural(n, 'slot')}" for k, n in c.by_cause.most_common())
    text = (f"late starts: {c.late_phases} of {plural(c.phases, 'phase')} ({c.share:.1%}) had a "
            f"slot start late, above the plan's late_target {target:.1%} ({why}; latest "
            f"{c.worst_ns / 1e6:.3g} ms after T0)")
    if c.lead_phases:
        text += "; " + _lead_verdict(c.lead_phases, c.phases, target)
    if c.by_cause.get("stall"):
        text += ("; stalls are the machine's" + (f" (its noise floor: stalls up to "
                                                 f"{floor_ns / 1e6:.3g} ms)" if floor_ns else "")
                 + ", no lead prevents them")
    if c.by_cause.get("busy core"):
        text += "; slots sharing a cpu wake one after another: give each slot a cpu"
    if c.by_cause.get("other work"):
        text += ("; slots whose cpu other work kept busy slept to T0 and woke late: "
                 "free their cpus")
    if c.by_cause.get("held"):
        text += ("; slots beside one whose cpu other work kept busy slept to T0 with it and "
                 "woke late: free that cpu")
    return text


def share_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a share k of n (sound at 0 and near it, unlike k/n +- z se)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def _lead_verdict(k: int, n: int, target: float) -> str:
    """Whether the lead kept the phases a short lead made late under the target, said only
    where chance cannot turn it (a share near the target flips from run to run of one
    plan): above it, under it, or within chance of it, with the interval."""
    lo, hi = share_interval(k, n)
    shown = f"{k} of {plural(n, 'phase')}, {k / n:.1%} [{lo:.1%}, {hi:.1%}]"
    if lo > target:
        return (f"the lead, which covers the dispatch times seen beyond the nodes' noise "
                f"floor (stalls within it are not chased: the run's warnings count them), "
                f"could not keep late armings under the target ({shown})")
    if hi < target:
        return f"the lead kept late armings under the target ({shown})"
    return f"late armings from a short lead were within chance of the target ({shown})"
