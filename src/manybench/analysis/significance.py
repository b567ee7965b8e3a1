"""Ratios of two samples with a 95% confidence interval, on log values; Student's t by hand.

Two samples of one figure (one value per repetition), a baseline's and a variant's. Both
estimates work on log values, so:
  - the ratio is variant / baseline of GEOMETRIC means (exp of the mean log difference): a
    ratio of times and the ratio of the matching rates are exact reciprocals, and one slow
    outlier moves it less than it moves an arithmetic mean;
  - the interval is symmetric in log terms (x1.1 and /1.1 are the same distance from 1), as a
    ratio should be, and timings, which are skewed to the right, are closer to normal there.

`paired`: when every repetition has a value on both sides. The expansion runs the variants of
a repetition back to back (A B A B), so a drift that hits both (page cache, thermal, another
user's job) cancels in each pair's log ratio; the test is a one-sample t on those n log
ratios, n - 1 degrees of freedom. This is the most powerful test the run's design allows.

`welch`: otherwise (a phase failed on one side, or two runs compared: repetitions of
different runs did not run together and pairing them would be arbitrary). Welch's t on the
two samples' log values, degrees of freedom by Welch-Satterthwaite, which stays right with
unequal sample sizes and variances (pooled Student's t, as pyperf uses, does not).

No scipy: the t quantile is the inverse of the t distribution's CDF, computed from the
regularized incomplete beta function (continued fraction, Lentz's method) and inverted by
bisection: exact to ~1e-10, enough for any table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

CONFIDENCE = 0.95
# fewer values on a side give no interval: from two, t(0.975, 1) = 12.7 makes it span orders
# of magnitude ([-100%, +967253%]), which reads as a finding and is none
MIN_N = 3


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    # the continued fraction converges fast only for x < (a + 1) / (a + b + 2): use the
    # symmetry I_x(a, b) = 1 - I_{1-x}(b, a) on the other side
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df (> 0, not necessarily whole) degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value with P(T <= t) = p (0 < p < 1): the inverse of t_cdf, by bisection."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:     # widen until the quantile is bracketed (df=1: ~1e5 at 1-1e-5)
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Estimate:
    """variant / baseline as a ratio of geometric means, with its confidence interval."""
    ratio: float
    low: float | None          # None: too few values for an interval
    high: float | None
    n_base: int                # values on each side (pairs: both the same)
    n_other: int
    method: str                # "paired" | "welch" | "" (no interval)
    df: float | None = None

    @property
    def n_too_small(self) -> bool:
        return self.low is None

    @property
    def significant(self) -> bool:
        """The interval leaves 1 (no difference) out."""
        return self.low is not None and self.high is not None and \
            (self.low > 1.0 or self.high < 1.0)


def _mean_var(xs: Sequence[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _logs(xs: Sequence[float]) -> list[float]:
    if any(x <= 0 for x in xs):
        raise ValueError("a ratio needs positive figures")
    return [math.log(x) for x in xs]


def _interval(diff: float, se: float, df: float | None, confidence: float
              ) -> tuple[float, float]:
    if se == 0.0 or df is None:    # no spread at all: the interval is the point itself
        return math.exp(diff), math.exp(diff)
    half = t_quantile(0.5 + confidence / 2.0, df) * se
    return math.exp(diff - half), math.exp(diff + half)


def paired(base: Sequence[float], other: Sequence[float], confidence: float = CONFIDENCE
           ) -> Estimate:
    """Paired: base[i] and other[i] ran together; a t interval on the n log ratios."""
    if len(base) != len(other):
        raise ValueError("paired samples must have the same length")
    d = [o - b for b, o in zip(_logs(base), _logs(other))]
    n = len(d)
    if n == 0:
        raise ValueError("no pairs")
    mean = sum(d) / n
    if n < MIN_N:
        return Estimate(math.exp(mean), None, None, n, n, "")
    _, var = _mean_var(d)
    low, high = _interval(mean, math.sqrt(var / n), n - 1, confidence)
    return Estimate(math.exp(mean), low, high, n, n, "paired", n - 1)


def welch(base: Sequence[float], other: Sequence[float], confidence: float = CONFIDENCE
          ) -> Estimate:
    """Unpaired: Welch's t interval on the difference of the mean log values."""
    lb, lo_ = _logs(base), _logs(other)
    nb, no = len(lb), len(lo_)
    if nb == 0 or no == 0:
        raise ValueError("a side has no values")
    mb, mo = sum(lb) / nb, sum(lo_) / no
    if nb < MIN_N or no < MIN_N:
        return Estimate(math.exp(mo - mb), None, None, nb, no, "")
    (_, vb), (_, vo) = _mean_var(lb), _mean_var(lo_)
    sb, so = vb / nb, vo / no
    se2 = sb + so
    # Welch-Satterthwaite; undefined when both samples are constant (then the interval is
    # the point: nothing varied)
    df = se2 ** 2 / (sb ** 2 / (nb - 1) + so ** 2 / (no - 1)) if se2 > 0 else None
    low, high = _interval(mo - mb, math.sqrt(se2), df, confidence)
    return Estimate(math.exp(mo - mb), low, high, nb, no, "welch", df)
