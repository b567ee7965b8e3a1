"""Units for a report column: one byte-rate unit per column, times in human units.

A column of byte rates is written in one unit chosen from its largest value (so 980 MiB/s
and 1.2 GiB/s never sit in one column as "980" and "1.2"); its unit goes in the header.
Times are written as people say them: "133 ms", "6.1 us", "2.5 s". A metric's name says its
unit by its suffix (triad_mb_s: 10^6 bytes/s, fsync_us: microseconds); a name with no known
suffix is a plain count.
"""
from __future__ import annotations

from typing import Iterable

RATE_UNITS = (("B/s", 1.0), ("KiB/s", 2.0**10), ("MiB/s", 2.0**20), ("GiB/s", 2.0**30),
              ("TiB/s", 2.0**40))
# name suffix -> (kind, factor to bytes/s or seconds); the longest matching suffix wins
SUFFIXES = {
    "_mb_s": ("rate", 1e6), "_mbs": ("rate", 1e6), "_gb_s": ("rate", 1e9),
    "_kb_s": ("rate", 1e3), "_mib_s": ("rate", 2.0**20), "_gib_s": ("rate", 2.0**30),
    "_kib_s": ("rate", 2.0**10), "_bytes_s": ("rate", 1.0), "_bps": ("rate", 1.0),
    "_gbit_s": ("rate", 1e9 / 8), "_mbit_s": ("rate", 1e6 / 8),
    "_ns": ("time", 1e-9), "_us": ("time", 1e-6), "_ms": ("time", 1e-3), "_s": ("time", 1.0),
    "_sec": ("time", 1.0), "_seconds": ("time", 1.0),
    "_ops_s": ("count", 1.0), "_per_s": ("count", 1.0),   # rates of things, not times
}


def metric_unit(name: str) -> tuple[str, float, str]:
    """(kind, factor, base name): kind "rate" (bytes/s), "time" (s) or "count" (as given)."""
    padded = "_" + name.lower()      # so a bare "mb_s" or "gbit_s" matches its suffix
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if padded.endswith(suffix) and len(padded) >= len(suffix):
            kind, factor = SUFFIXES[suffix]
            base = name[: max(0, len(name) - len(suffix))] or name
            return kind, factor, base
    return "count", 1.0, name


def num(x: float) -> str:
    """Three significant digits, never in exponent form: 0.0123, 1.23, 12.3, 123, 12345;
    below a thousandth of the column's unit "<0.001" (the column's unit fits its largest
    values; the exact figure is in `report --json`)."""
    a = abs(x)
    if a >= 100 or x == 0:
        return f"{x:.0f}"
    if a < 0.001:
        return "<0.001" if x > 0 else ">-0.001"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def rate_unit(values: Iterable[float | None]) -> tuple[str, float]:
    """The unit for a column of byte rates: the largest that keeps its top value >= 1."""
    top = max((abs(v) for v in values if v is not None), default=0.0)
    name, div = RATE_UNITS[0]
    for n, d in RATE_UNITS:
        if top >= d:
            name, div = n, d
    return name, div


_PREFIXES = (("G", 1e9), ("M", 1e6), ("k", 1e3))


def column_unit(unit: str, medians: Iterable[float | None]) -> tuple[str, float]:
    """One unit for a column of values given in `unit` (analysis/values.py): byte rates and
    times scaled to their largest median, counts and ops/s with a k/M/G prefix, any other
    unit (MB/s, GFLOPS) as declared. (header unit, divisor)."""
    vals = [abs(v) for v in medians if v is not None]
    top = max(vals, default=0.0)
    if unit == "B/s":
        return rate_unit(vals)
    if unit == "s":
        return time_unit(top) if top else ("us", 1e-6)
    if unit in ("", "ops/s"):
        for prefix, div in _PREFIXES:
            if top >= 10 * div:
                return prefix + unit if unit else prefix, div
        return unit, 1.0
    return unit, 1.0


_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def time_unit(seconds: float) -> tuple[str, float]:
    a = abs(seconds)
    for name, f in _TIME_UNITS:
        if a >= f:
            return name, f
    return "ns", 1e-9


def human_time(seconds: float | None) -> str:
    """"133 ms", "6.10 us", "2.50 s"; "-" for None."""
    if seconds is None:
        return "-"
    name, f = time_unit(seconds)
    return f"{num(seconds / f)} {name}"


def time_spread(med: float, lo: float, hi: float) -> str:
    """A median time with its range in the median's unit: "133 ms (120-151)"."""
    name, f = time_unit(med)
    m, a, b = num(med / f), num(lo / f), num(hi / f)
    return f"{m} {name}" if a == b == m else f"{m} {name} ({a}-{b})"


def median_only(cell: str) -> str:
    """A spread cell without its range: "1.23 (1.10-1.30)" -> "1.23"."""
    return cell.split(" (", 1)[0] if cell.endswith(")") else cell


def value_spread(med: float, lo: float, hi: float, div: float = 1.0) -> str:
    """A median with its range, all divided by the column's unit: "1.23 (1.10-1.30)"."""
    m, a, b = num(med / div), num(lo / div), num(hi / div)
    return m if a == b == m else f"{m} ({a}-{b})"


def count_spread(med: float, lo: float, hi: float) -> str:
    """Counts in k/M/G with the median's multiplier for the range: "12.3k (11.9-12.8)"."""
    div, suffix = 1.0, ""
    for limit, d, s in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(med) >= limit:
            div, suffix = d, s
            break
    m, a, b = num(med / div), num(lo / div), num(hi / div)
    return m + suffix if a == b == m else f"{m}{suffix} ({a}{suffix}-{b}{suffix})"
