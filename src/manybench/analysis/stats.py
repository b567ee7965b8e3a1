"""Order statistics used everywhere in analysis, with one documented percentile definition.

Nearest rank: the q-th percentile of n sorted values is the value at rank ceil(q/100 * n)
(1-based, at least 1). It is always one of the measured values (no interpolation between two
slots that never saw that figure), p100 is the maximum, and the median is p50 under the same
rule: for an even count it is the lower of the two middle values.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
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


def median_without(xs: Sequence[N], own: N) -> N:
    """The nearest-rank median of sorted `xs` (two or more) without one occurrence of `own`
    (one of them): its peers' median, found in the one sort of them all (a phase of 64,000
    slots is judged in one sort, not a median per slot)."""
    k = bisect_left(xs, own)
    m = (len(xs) - 2) // 2
    return xs[m] if m < k else xs[m + 1]


@dataclass(frozen=True)
class Dist:
    """Median, p99 and max of a distribution (nearest rank); n values; its min, and the 95%
    confidence interval of its mean (Stats) when n > 1."""
    median: float
    p99: float
    max: float
    n: int
    # derived from the same values: not part of what makes two distributions equal
    min: float | None = field(default=None, compare=False)
    ci_low: float | None = field(default=None, compare=False)
    ci_high: float | None = field(default=None, compare=False)

    @classmethod
    def of(cls, values: Sequence[N]) -> Dist | None:
        if not values:
            return None
        st = Stats.of(values)
        return cls(median(values), nearest_rank(values, 99), max(values), len(values),
                   min(values), st.ci_low if st else None, st.ci_high if st else None)


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


CONFIDENCE = 0.95
HIGH_CV = 0.10     # pyperf's threshold: repetitions that vary more are not one figure


@dataclass(frozen=True)
class Stats(Spread):
    """A figure over repetitions: Spread's min, median, max and n, with the mean, the sample
    standard deviation, Student's t 95% confidence interval of the mean and the coefficient of
    variation (stddev / mean). With one value there is no spread: stddev, CI and CV are None."""
    mean: float
    stddev: float | None
    ci_low: float | None
    ci_high: float | None
    cv: float | None

    @classmethod
    def of(cls, values: Sequence[N]) -> Stats | None:   # type: ignore[override]
        xs = [float(v) for v in values]
        if not xs:
            return None
        n, mean = len(xs), sum(xs) / len(xs)
        sd = lo = hi = cv = None
        if n > 1:
            sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
            from .significance import t_quantile   # noqa: PLC0415 (it imports nothing here)
            half = t_quantile(0.5 + CONFIDENCE / 2, n - 1) * sd / math.sqrt(n)
            lo, hi = mean - half, mean + half
            cv = sd / abs(mean) if mean else None
        return cls(min(xs), median(xs), max(xs), n, mean, sd, lo, hi, cv)

    @property
    def unstable(self) -> bool:
        """The coefficient of variation exceeds HIGH_CV."""
        return self.cv is not None and self.cv > HIGH_CV
