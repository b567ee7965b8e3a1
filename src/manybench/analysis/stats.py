"""Order statistics used everywhere in analysis, with one documented percentile definition.

Nearest rank: the q-th percentile of n sorted values is the value at rank ceil(q/100 * n)
(1-based, at least 1). It is always one of the measured values (no interpolation between two
slots that never saw that figure), p100 is the maximum, and the median is p50 under the same
rule: for an even count it is the lower of the two middle values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence, TypeVar

N = TypeVar("N", int, float)


def nearest_rank(values: Iterable[N], q: float) -> N:
    """q-th percentile (0 <= q <= 100) by nearest rank; ValueError on no values."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    rank = max(1, math.ceil(q / 100 * len(xs)))
    return xs[rank - 1]


def median(values: Iterable[N]) -> N:
    """Nearest-rank p50 (the lower middle value for an even count)."""
    return nearest_rank(values, 50)


@dataclass(frozen=True)
class Dist:
    """Median, p99 and max of a distribution (nearest rank); n values."""
    median: float
    p99: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[N]) -> Dist | None:
        return cls(median(values), nearest_rank(values, 99), max(values), len(values)) \
            if values else None


@dataclass(frozen=True)
class Spread:
    """Min, median (nearest rank) and max; n values."""
    min: float
    median: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[N]) -> Spread | None:
        return cls(min(values), median(values), max(values), len(values)) if values else None
