"""Whose figure a read figure is: the device's, memory's, or a mix of both, from `from_memory`
(the share of the bytes read that no device read served, kernels/pagecache.py).

fio and IOR users take a read figure for the device's when no byte of it came from the page
cache (fio's direct=1, or invalidate=1 on a file the run does not read twice; IOR's -C and
files larger than memory). A byte served from memory costs next to nothing beside a device
read, so a share f of them raises the rate by up to 1 / (1 - f): a fifth from memory is up
to 1.25x, a figure no longer the device's. The rule:
  under NEGLIGIBLE (5%)   "device": at most 1.05x, about half the 10% spread at which a point is
                          called unstable (run/quality.py)
  NEGLIGIBLE to MEMORY    "mixed": part device, part memory; a finding says by how much the
                          figure can overstate the device
  MEMORY (50%) or more    "memory": the figure is memory's
Every cell shows the share itself, so no label hides it.
"""
from __future__ import annotations

import math

NEGLIGIBLE = 0.05
MEMORY = 0.5


def bound(f: float) -> float:
    """How many times the device's rate a figure with share f from memory can be."""
    return 1.0 / max(1e-9, 1.0 - f)


def percent(f: float) -> str:
    """The share as a percentage, rounded down so that no share reads as the bound above it
    (4.96% is 4.9%, not the 5% where "mixed" begins; 49.9% is 49%): to a tenth under 10%,
    whole above."""
    p = f * 100 + 1e-9      # 0.29 * 100 is 28.999999999999996
    if p >= 10:
        return f"{math.floor(p)}%"
    return f"{math.floor(p * 10) / 10:.1f}".removesuffix(".0") + "%"


def cell(f: float) -> str:
    """"device (2% from memory)", "mixed (23% from memory)", "memory (98% from memory)"."""
    what = "memory" if f >= MEMORY else "mixed" if f >= NEGLIGIBLE else "device"
    return f"{what} ({percent(f)} from memory)"


def finding(f: float) -> tuple[str, str] | None:
    """(text, evidence) when the share is not negligible, else None."""
    evidence = f"the median slot read {percent(f)} of its bytes from memory"
    if f >= MEMORY:
        return ("reads came from the page cache, not the device: the figure is memory's",
                evidence)
    if f >= NEGLIGIBLE:
        text = (f"part of the reads came from the page cache: not a device figure, it can "
                f"overstate the device by up to {bound(f):.2f}x (direct = true reads the "
                "device alone)")
        return text, evidence
    return None


NOTE = ("reads from: the share of the bytes read that came from the page cache over the "
        "timed window (1 - the bytes the slot fetched from storage, /proc/self/io "
        f"read_bytes, / the bytes it read): \"device\" under {NEGLIGIBLE:.0%}, \"memory\" "
        f"from {MEMORY:.0%}, \"mixed\" between, where the figure can overstate the device "
        "by up to 1 / (1 - share); a file read again and again, cache = \"keep\", or a file "
        "system that keeps files in memory such as tmpfs reads memory")
