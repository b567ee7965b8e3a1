"""A slot with idle cpus of its own does not spin while another slot of its phase on the node
sleeps.

Each slot chooses for its own cpus (spin_choice.py). But a phase starts when its last slot
does: while one slot sleeps to T0 (its cpus busy), the others' spin buys the phase's skew
nothing and costs up to SPIN_NS of cpu each, every phase (issue 30: one busy loop sitting on
one of two cpus, the other slot spun every phase, 290-330 us of its cpu each: docs/scale.md).
So the agent, which sees every slot's result, holds the spin of the phase's other slots
while one of the last phase's slept for busy cpus: they get no spin right (each keeps its
own choice, untouched, for when the hold ends), and their records carry `spin_held`, the
sleeper's busy share. The sleepers keep theirs and go on reading their cpus, so once a
sleeper spins again the hold ends with the next phase.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..extra_keys import WARNINGS
from ..kernels.binding import cpulist
from ..kernels.figures import CPU_BUSY, SPIN_HELD
from ..results.contract import WarningKind
from .protocol import SlotPlace
from .wire_types import Result


def sleepers(last: Iterable[tuple[int, Result | None]]) -> dict[int, float]:
    """The slots of the last phase that slept to T0 for busy cpus (slot: busy share)."""
    out = {}
    for slot, res in last:
        share = res.metrics.get(CPU_BUSY.name) if res is not None else None
        if share is not None:
            out[slot] = share
    return out


def held_place(place: SlotPlace, asleep: dict[int, float]) -> tuple[SlotPlace, float | None]:
    """The place a slot gets and the share its spin is held by (None: not held)."""
    if not place.spin or not asleep or place.slot in asleep:
        return place, None
    return replace(place, spin=False), max(asleep.values())


def held_result(res: Result, share: float, asleep: dict[int, float], first: bool,
                place: SlotPlace, phase: int) -> Result:
    """A held slot's result with what held it; its first held phase told as a warning."""
    metrics = {**res.metrics, SPIN_HELD.name: round(share, 3)}
    extra = res.extra
    if first:
        who = max(asleep, key=asleep.__getitem__)
        told = (f"slot {place.slot} (cpus {cpulist(place.affinity)}) sleeps until T0 instead "
                f"of spinning from phase {phase}: slot {who} of the phase on this node sleeps "
                f"(other work took {share:.0%} of its cpus), and a spin buys the phase's skew "
                "nothing while one of its slots wakes from a sleep")
        extra = {**extra, WARNINGS: [*extra.get(WARNINGS, ()), [WarningKind.BUSY_CPU, told]]}
    return replace(res, metrics=metrics, extra=extra)
