"""Units for a report column: every column states one unit, in its header, and every view
of a figure (table, plot, `report --json`'s `shown_unit`) writes it in that unit.

A column of byte rates is written in one unit chosen from its range, the largest value it
shows (so 980 MiB/s and 1.2 GiB/s never sit in one column as "980" and "1.2", and a maximum
never prints as 954107); times in one of s, ms, us, ns the same way; counts with a k/M/G
prefix; a metric's declared unit (GFLOPS), or the one its name says (MB/s, us), as is.
The values come from analysis/values.py (which reads a metric's unit, analysis/metric_units.py).
"""
from __future__ import annotations

import math
from typing import Iterable

from ..analysis.values import AGGREGATE, Value

RATE_UNITS = (("B/s", 1.0), ("KiB/s", 2.0**10), ("MiB/s", 2.0**20), ("GiB/s", 2.0**30),
              ("TiB/s", 2.0**40))


def num(x: float) -> str:
    """Three significant digits, never in exponent form: 0.0123, 0.600, 1.23, 12.3, 123,
    12345; below a thousandth of the column's unit "<0.001" (the column's unit fits its
    values; the exact figure is in `report --json`)."""
    a = abs(x)
    if a >= 100 or x == 0:
        return f"{x:.0f}"
    if a < 0.001:
        return "<0.001" if x > 0 else ">-0.001"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1 or _shown(a) >= 1:
        return f"{x:.2f}"
    return f"{x:.{2 - math.floor(math.log10(a))}f}"


def _shown(x: float) -> float:
    """x as a cell shows it, three significant digits: 999.997 us is "1000" us, so 1.00 ms."""
    return float(f"{x:.3g}")


_TIME_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))
_PREFIXES = (("G", 1e9), ("M", 1e6), ("k", 1e3))


def _pick(ladder: tuple[tuple[str, float], ...], top: float, least: float | None
          ) -> tuple[str, float]:
    """From units in ascending order: the largest that shows the column's top value >= 1;
    then a smaller one while a median would read "<0.001" and the top stays under 10,000
    (a maximum never prints as 954107, a median never as <0.001 where both can be had)."""
    i = max((j for j, (_, d) in enumerate(ladder) if _shown(top / d) >= 1), default=0)
    while i > 0 and least and least / ladder[i][1] < 0.001 and top / ladder[i - 1][1] < 1e4:
        i -= 1
    return ladder[i]


def rate_unit(values: Iterable[float | None], least: float | None = None
              ) -> tuple[str, float]:
    """The unit for a column of byte rates (see _pick)."""
    top = max((abs(v) for v in values if v is not None), default=0.0)
    return _pick(RATE_UNITS, top, least)


def time_unit(seconds: float, least: float | None = None) -> tuple[str, float]:
    """The unit for times up to `seconds` (see _pick)."""
    return _pick(_TIME_UNITS, abs(seconds), least) if seconds else ("us", 1e-6)


def column_unit(unit: str, values: Iterable[float | None], fixed: bool = False,
                least: float | None = None) -> tuple[str, float]:
    """One unit for a column of values given in `unit` (analysis/values.py): byte rates and
    times scaled to the range the column shows (its largest value; `least`, its smallest
    median), counts and ops/s with a k/M/G prefix, any other unit (GFLOPS), or one a name
    says (`fixed`), as is. (header unit, divisor)."""
    vals = [abs(v) for v in values if v is not None]
    top = max(vals, default=0.0)
    if fixed:
        return unit, 1.0
    if unit == "B/s":
        return rate_unit(vals, least)
    if unit == "s":
        return time_unit(top, least)
    if unit in ("", "ops/s"):
        for prefix, div in _PREFIXES:
            if top >= 10 * div:
                return prefix + unit if unit else prefix, div
        return unit, 1.0
    return unit, 1.0


def values_unit(vs: list[Value]) -> tuple[str, float]:
    """The unit every view writes these Values of one figure and scope in (a task's column:
    its points' values): from the range they show."""
    if not vs:
        return "", 1.0
    least = min((abs(v.median) for v in vs if v.median), default=None)
    return column_unit(vs[0].unit, [v.top() for v in vs], vs[0].fixed, least)


def figure_units(by_scope: dict[str, list[Value]]) -> dict[str, tuple[str, float]]:
    """The unit of each scope of one figure of a task (scope -> its Values): a share (per
    job, per slot) in its aggregate's unit, so the two read side by side in every view."""
    units: dict[str, tuple[str, float]] = {}
    for scope, vs in by_scope.items():
        units[scope] = units[AGGREGATE] if scope != AGGREGATE and AGGREGATE in units \
            else values_unit(vs)
    return units


def median_only(cell: str) -> str:
    """A spread cell without its range: "1.23 (1.10-1.30)" -> "1.23"."""
    return cell.split(" (", 1)[0] if cell.endswith(")") else cell


def value_spread(med: float, lo: float, hi: float, div: float = 1.0) -> str:
    """A median with its range, all divided by the column's unit: "1.23 (1.10-1.30)"."""
    m, a, b = num(med / div), num(lo / div), num(hi / div)
    return m if a == b == m else f"{m} ({a}-{b})"

