"""A mergeable summary of a figure's values over records (docs/definitions.md, "Over records,
at any size"): n, sum, min and max always exact; the values themselves while there are at most
EXACT_MAX of them (every order statistic exact); beyond, a quantile sketch of log buckets
whose estimate of any nearest-rank percentile is within RELATIVE of the true value (DDSketch's
rule: a bucket k holds (g^(k-1), g^k], g = (1 + a) / (1 - a), and answers 2 g^k / (g + 1)).

A phase stores one per figure (analysis/aggregates.py); a point merges its phases', so what a
reader holds is bounded by the buckets, not the records.
"""
from __future__ import annotations

import math
from array import array
from typing import Any, Iterable, Sequence, Union

from .stats import Dist, Spread, Stats, nearest_rank

EXACT_MAX = 1024          # values kept as they are up to this many
RELATIVE = 1e-3           # the sketch's stated relative accuracy beyond
_G = (1 + RELATIVE) / (1 - RELATIVE)
_LOG_G = math.log(_G)


def _bucket(x: float) -> int:
    return math.ceil(math.log(x) / _LOG_G)


def _value(k: int) -> float:
    return 2 * _G ** k / (_G + 1)


# a sketch's buckets: a dict while it is added to; read back from a phase's aggregates, two
# arrays (keys ascending, counts): 16 bytes a bucket, not ~70 (a reader holds every phase's)
Buckets = Union[dict, tuple]


def _ascending(b: Buckets) -> list[tuple[int, int]]:
    return list(zip(*b)) if isinstance(b, tuple) else sorted(b.items())


def _packed(b: Any) -> tuple:
    if isinstance(b, dict):      # as written before buckets were stored as two lists
        b = [sorted(int(k) for k in b), [b[k] for k in sorted(b, key=int)]]
    return array("q", b[0]), array("q", b[1])


class Sketch:
    """Values of one figure: exact while few, else log buckets (see the module doc)."""
    __slots__ = ("n", "sum", "m2", "lo", "hi", "values", "pos", "neg", "zero")

    def __init__(self) -> None:
        self.n = 0
        self.sum = 0.0
        self.m2 = 0.0            # sum of squared deviations from the mean (Chan's merge)
        self.lo: float | None = None
        self.hi: float | None = None
        self.values: list | None = []     # None once bucketed
        self.pos: Buckets = {}
        self.neg: Buckets = {}
        self.zero = 0

    @classmethod
    def of(cls, values: Sequence[float]) -> Sketch:
        s = cls()
        if not values:
            return s
        s.n, s.lo, s.hi = len(values), min(values), max(values)
        if s.n > EXACT_MAX:      # a phase of 64,000 slots: bucketed in numpy
            s.values = None
            s._bucket_array(values)
            return s
        s.sum = float(sum(values))
        mean = s.sum / s.n
        s.m2 = float(sum((v - mean) ** 2 for v in values))
        s.values = list(values)
        return s

    def _bucket_array(self, values: Sequence[float]) -> None:
        import numpy as np   # noqa: PLC0415 (only a large phase needs it)
        arr = np.asarray(values, dtype=np.float64)
        self.sum = float(arr.sum())
        self.m2 = float(np.square(arr - self.sum / self.n).sum())
        for mine, part in ((self.pos, arr[arr > 0]), (self.neg, -arr[arr < 0])):
            if part.size:
                ks, counts = np.unique(np.ceil(np.log(part) / _LOG_G).astype(np.int64),
                                       return_counts=True)
                mine.update(zip(ks.tolist(), counts.tolist()))
        self.zero = int(np.count_nonzero(arr == 0))

    def _unpack(self) -> None:
        if isinstance(self.pos, tuple):
            self.pos = dict(zip(*self.pos))
        if isinstance(self.neg, tuple):
            self.neg = dict(zip(*self.neg))

    def _bucket_all(self) -> None:
        self._unpack()
        for v in self.values or ():
            self._put(v, 1)
        self.values = None

    def _put(self, v: float, c: int) -> None:
        if v > 0:
            k = _bucket(v)
            self.pos[k] = self.pos.get(k, 0) + c
        elif v < 0:
            k = _bucket(-v)
            self.neg[k] = self.neg.get(k, 0) + c
        else:
            self.zero += c

    def merge(self, o: Sketch) -> Sketch:
        """Add another's values (in place; returns self)."""
        if not o.n:
            return self
        if not self.n:
            self.lo, self.hi = o.lo, o.hi
        else:
            delta = o.sum / o.n - self.sum / self.n
            self.m2 += o.m2 + delta * delta * self.n * o.n / (self.n + o.n)
            self.lo, self.hi = min(self.lo, o.lo), max(self.hi, o.hi)   # type: ignore
        self.n += o.n
        self.sum += o.sum
        if self.values is not None and o.values is not None and self.n <= EXACT_MAX:
            self.values += o.values
            return self
        if self.values is not None:
            self._bucket_all()
        self._unpack()
        if o.values is not None:
            for v in o.values:
                self._put(v, 1)
        else:
            for mine, theirs in ((self.pos, o.pos), (self.neg, o.neg)):
                for k, c in _ascending(theirs):
                    mine[k] = mine.get(k, 0) + c   # type: ignore[index, union-attr]
            self.zero += o.zero
        return self

    @property
    def exact(self) -> bool:
        return self.values is not None

    def quantile(self, q: float) -> float:
        """The nearest-rank q-th percentile: exact while exact, else within RELATIVE (clamped
        to the exact min and max; p0 and p100 are them)."""
        if self.values is not None:
            return nearest_rank(self.values, q)
        rank = max(1, math.ceil(q / 100 * self.n))
        if rank >= self.n:
            return self.hi   # type: ignore[return-value]
        if rank == 1:
            return self.lo   # type: ignore[return-value]
        seen = 0
        for k, c in reversed(_ascending(self.neg)):
            seen += c
            if seen >= rank:
                return self._clamp(-_value(k))
        seen += self.zero
        if seen >= rank:
            return 0.0
        for k, c in _ascending(self.pos):
            seen += c
            if seen >= rank:
                return self._clamp(_value(k))
        return self.hi   # type: ignore[return-value]  # pragma: no cover

    def _clamp(self, x: float) -> float:
        return min(max(x, self.lo), self.hi)   # type: ignore[type-var]

    def spread(self) -> Spread | None:
        if not self.n:
            return None
        if self.values is not None:
            return Spread.of(self.values)
        return Spread(self.lo, self.quantile(50), self.hi, self.n)   # type: ignore[arg-type]

    def median(self) -> float | None:
        return self.quantile(50) if self.n else None

    def dist(self) -> Dist | None:
        if not self.n:
            return None
        if self.values is not None:
            return Dist.of(self.values)
        lo = hi = None
        if self.n > 1:
            from .significance import t_quantile   # noqa: PLC0415 (as stats.Stats)
            mean = self.sum / self.n
            sd = math.sqrt(max(self.m2, 0.0) / (self.n - 1))
            half = t_quantile(0.975, self.n - 1) * sd / math.sqrt(self.n)
            lo, hi = mean - half, mean + half
        return Dist(self.quantile(50), self.quantile(99), self.hi, self.n,   # type: ignore
                    self.lo, lo, hi)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"n": self.n, "s": self.sum, "m2": self.m2, "lo": self.lo,
                             "hi": self.hi}
        if self.values is not None:
            d["v"] = self.values
        else:
            d.update(p=[list(x) for x in zip(*_ascending(self.pos))] or [[], []],
                     g=[list(x) for x in zip(*_ascending(self.neg))] or [[], []], z=self.zero)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Sketch:
        s = cls()
        s.n, s.sum, s.m2, s.lo, s.hi = d["n"], d["s"], d["m2"], d["lo"], d["hi"]
        if "v" in d:
            s.values = list(d["v"])
        else:
            s.values = None
            s.pos, s.neg = _packed(d["p"]), _packed(d["g"])
            s.zero = d["z"]
        return s


def merged(sketches: Iterable[Sketch]) -> Sketch:
    """One sketch of them all (a new one: the parts are left as they were)."""
    out = Sketch()
    for s in sketches:
        out.merge(s)
    return out


__all__ = ["EXACT_MAX", "RELATIVE", "Sketch", "Stats", "merged"]
