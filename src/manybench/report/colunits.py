"""Units for a report column: every column states one unit, in its header.

A column of byte rates is written in one unit chosen from its largest median (so 980 MiB/s
and 1.2 GiB/s never sit in one column as "980" and "1.2"); times in one of s, ms, us, ns the
same way; counts with a k/M/G prefix; a metric's declared unit (MB/s, GFLOPS) as declared.
The values come in their base unit from analysis/values.py (which also reads a metric's
unit from its declaration or its name's suffix).
"""
from __future__ import annotations

from typing import Iterable

RATE_UNITS = (("B/s", 1.0), ("KiB/s", 2.0**10), ("MiB/s", 2.0**20), ("GiB/s", 2.0**30),
              ("TiB/s", 2.0**40))


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


def median_only(cell: str) -> str:
    """A spread cell without its range: "1.23 (1.10-1.30)" -> "1.23"."""
    return cell.split(" (", 1)[0] if cell.endswith(")") else cell


def value_spread(med: float, lo: float, hi: float, div: float = 1.0) -> str:
    """A median with its range, all divided by the column's unit: "1.23 (1.10-1.30)"."""
    m, a, b = num(med / div), num(lo / div), num(hi / div)
    return m if a == b == m else f"{m} ({a}-{b})"

