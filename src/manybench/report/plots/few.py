"""At most MAX_BARS of a phase's slots in a figure that draws one bar per slot (Gantt,
per-slot time): a phase of 64,000 slots would take a minute and gigabytes to draw, and no
eye reads 64,000 bars. Beyond it the figure shows slots evenly spaced in node and slot order
and, whatever their place, the ones that stand out most (the latest ends, the longest
times), and its title says which it shows."""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

MAX_BARS = 256
OUTLIERS = MAX_BARS // 8      # the slots that stand out, always shown

R = TypeVar("R")


def few(recs: Sequence[R], stands_out: Callable[[R], float]) -> tuple[list[R], str]:
    """The records drawn, in their order, and what the title says of them ("" for all)."""
    if len(recs) <= MAX_BARS:
        return list(recs), ""
    top = sorted(range(len(recs)), key=lambda i: stands_out(recs[i]), reverse=True)[:OUTLIERS]
    step = len(recs) / (MAX_BARS - OUTLIERS)
    chosen = sorted(set(top) | {int(k * step) for k in range(MAX_BARS - OUTLIERS)})
    return ([recs[i] for i in chosen],
            f"{len(chosen)} of {len(recs):,} slots: every {step:.0f}th and the {OUTLIERS} ")
