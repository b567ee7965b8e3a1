"""Figures of a point's records one by one (kernels/figures.py): each slot's time and its own
rates, and the facts (texts) its records carry. The per-slot plot draws the same records'
values (report/plots/per_slot.py), so the figure and the table's column are one."""
from __future__ import annotations

import functools

from ..kernels import figures as F
from ..kernels import kernel
from ..record import Record
from .stats import Spread

NS = 1e9


def slot_seconds(r: Record) -> float:
    """A record's elapsed time (per-slot time): its monotonic elapsed, else end - start."""
    return r.elapsed_s if r.elapsed_s > 0 else (r.end_ns - r.start_ns) / NS


def own_rate(r: Record, what: str, secs: float | None = None) -> float | None:
    """A slot's own rate (own bandwidth, own ops rate): its bytes (or ops) / its own elapsed
    (`secs`, its slot_seconds where known), not the phase's window; None when it timed
    nothing. `what`: "bytes" or "ops"."""
    secs = slot_seconds(r) if secs is None else secs
    return getattr(r, what) / secs if secs > 0 else None


def own_rates(ok: list[Record], secs: list[float], what: str) -> Spread | None:
    """Each slot's own rate of `what` over the records, when any did some; secs: each
    record's slot_seconds."""
    if not any(getattr(r, what) for r in ok):
        return None
    return Spread.of([x for r, t in zip(ok, secs) if (x := own_rate(r, what, t)) is not None])


def texts(kernel_name: str, ok: list[Record]) -> dict[str, str]:
    """The texts of the TEXT metrics of the records (a tool's version), distinct, in order:
    a tool's output parsed, so only a command's (a built-in kernel prints none)."""
    if not kernel(kernel_name).from_command:
        return {}
    seen: dict[str, dict[str, None]] = {}
    for r in ok:
        for name, v in r.metrics.items():
            if isinstance(v, str) and _fact(kernel_name, name):
                seen.setdefault(name, {})[v] = None
    return {name: ", ".join(vs) for name, vs in seen.items()}


@functools.lru_cache(maxsize=4096)
def _fact(kernel_name: str, name: str) -> bool:
    f = kernel(kernel_name).figure(name)
    return f is not None and f.role == F.TEXT
