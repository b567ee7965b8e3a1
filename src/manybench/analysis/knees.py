"""What a curve over workers shows beyond its noise (the thresholds: analysis/hints.py).

A curve is one task's figure (aggregate bandwidth, else ops/s) at each worker count with
every other parameter fixed, as analysis/values.py gives it: a median and the 95% interval
of the mean over repetitions. Its medians suggest a shape: it falls (the last point >= 10%
below the best), or it saturates (every step after a knee gained under a quarter of linear
scaling). A shape names a cause only when the intervals bear it out; a noisy curve is judged
by its intervals, not by where its medians happened to land.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .values import Value

FALL = 0.90          # falls: the last point at or below this share of the best
SATURATED = 0.25     # saturates: each step gained under this share of linear scaling
POINTS = 3           # worker counts a curve needs to have a shape


def falls(series: Sequence[tuple[int, float]]) -> tuple[int, int] | None:
    """(best workers, last workers) when the last median is >= 10% below the best's."""
    vs = [v for _, v in series]
    best = max(range(len(vs)), key=lambda i: vs[i])
    if best < len(vs) - 1 and vs[-1] <= FALL * vs[best]:
        return series[best][0], series[-1][0]
    return None


def _under(series: Sequence[tuple[int, float]], j: int) -> bool:
    """Whether step j (from point j - 1) gained under a quarter of linear scaling."""
    (w0, v0), (w1, v1) = series[j - 1], series[j]
    gained = (v1 - v0) / v0 if v0 > 0 else 0.0
    return gained < SATURATED * (w1 - w0) / w0


def saturates(series: Sequence[tuple[int, float]]) -> tuple[int, int] | None:
    """(knee workers, next workers): the first worker count after which every step gained
    under a quarter of linear scaling."""
    for i in range(1, len(series)):
        if all(_under(series, j) for j in range(i, len(series))):
            return series[i - 1][0], series[i][0]
    return None


def knee(series: Sequence[tuple[int, float]]) -> tuple[str, int, int] | None:
    """The medians' shape: ("falls", best, last), ("saturates", knee, next) or None."""
    if len(series) < POINTS:
        return None
    f = falls(series)
    if f is not None:
        return ("falls", *f)
    s = saturates(series)
    return None if s is None else ("saturates", *s)


def linear_gain(a: int, b: int) -> float:
    """What linear scaling gains from a to b workers (1.0: +100%)."""
    return (b - a) / a


@dataclass(frozen=True)
class Verdict:
    """What a curve shows: kind "falls" or "knee" (a cause, beyond the noise), "noise" (no
    cause: the points, or the shape, within their noise) or "repetitions" (no intervals to
    tell); shape: what the medians suggest ("falls", "saturates", "" for none); the points
    it rests on, by workers."""
    kind: str
    shape: str
    workers: tuple[int, ...]


def _below(low: Value, high: Value, scale: float = 1.0) -> bool:
    """low's interval lies wholly below high's (scaled by `scale`)."""
    return (low.ci_high is not None and high.ci_low is not None
            and low.ci_high < high.ci_low * scale)


def overlap(values: Sequence[Value]) -> bool:
    """Every interval shares a value with every other (on a line: one value lies in all)."""
    return max(v.ci_low for v in values) <= min(v.ci_high for v in values)   # type: ignore


def judge(series: Sequence[tuple[int, Value]]) -> Verdict | None:
    """The verdict on a curve of POINTS or more worker counts (ascending), or None (nothing
    to say: it scales, or its medians show no shape and some points differ)."""
    if len(series) < POINTS:
        return None
    at = dict(series)
    medians = [(w, v.median) for w, v in series]
    fall, sat = falls(medians), saturates(medians)
    last = series[-1][0]
    shape = (("falls", fall) if fall is not None else
             ("saturates", (sat[0], last)) if sat is not None else None)
    if any(v.ci_low is None or v.ci_high is None for _, v in series):
        return None if shape is None else Verdict("repetitions", shape[0], shape[1])
    if fall is not None and _below(at[fall[1]], at[fall[0]]):
        return Verdict("falls", "falls", fall)
    if sat is not None and _below(at[last], at[sat[0]],
                                  1 + SATURATED * linear_gain(sat[0], last)):
        return Verdict("knee", "saturates", (sat[0], last))
    if overlap([v for _, v in series]):
        return Verdict("noise", "", tuple(w for w, _ in series))
    return None if shape is None else Verdict("noise", shape[0], shape[1])
