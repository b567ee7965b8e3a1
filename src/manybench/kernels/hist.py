"""Per-operation latency histograms: the C kernels' log-linear buckets, merged and read.

The C side counts latencies in a log-linear histogram (native/API.md): values below 64 ns
have a bucket each; above, every power of two is split into 32 equal buckets, so a bucket's
width is at most 1/32 of its lower bound and its midpoint is within 1/64 of any value in it.
A sparse histogram is a dict {bucket: count} holding the non-zero buckets only; keys that
went through JSON come back as strings, and every function here accepts both.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping

HIST_BUCKETS = 1920
_LINEAR = 64   # values below this have their own bucket
_SUB = 32      # buckets per power of two above it

Sparse = Mapping[int | str, int]


def bucket_of(value_ns: int) -> int:
    """The bucket a latency of `value_ns` falls in (the C rule, for tests and tools)."""
    v = int(value_ns)
    if v < _LINEAR:
        return max(v, 0)
    e = v.bit_length() - 1
    return _LINEAR + (e - 6) * _SUB + ((v >> (e - 5)) - _SUB)


def bucket_range(bucket: int) -> tuple[int, int]:
    """Lowest and highest ns value (inclusive) that fall in `bucket`."""
    b = int(bucket)
    if not 0 <= b < HIST_BUCKETS:
        raise ValueError(f"histogram bucket {b} out of range 0..{HIST_BUCKETS - 1}")
    if b < _LINEAR:
        return b, b
    e, m = 6 + (b - _LINEAR) // _SUB, _SUB + (b - _LINEAR) % _SUB
    shift = e - 5
    return m << shift, ((m + 1) << shift) - 1


def bucket_value(bucket: int) -> float:
    """Representative ns value of `bucket`: the midpoint of its range."""
    lo, hi = bucket_range(bucket)
    return (lo + hi) / 2


def decode(raw: bytes | None) -> dict[int, int]:
    """Sparse {bucket: count} from the C kernels' HIST_BUCKETS little-endian uint64 counts."""
    if not raw:
        return {}
    if len(raw) % 8:
        raise ValueError(f"histogram of {len(raw)} bytes is not a whole number of uint64")
    counts = struct.unpack(f"<{len(raw) // 8}Q", raw)
    return {b: c for b, c in enumerate(counts) if c}


def normalize(hist: Sparse | None) -> dict[int, int]:
    """Int keys, no zero counts (a histogram that went through JSON has str keys)."""
    return {int(b): int(c) for b, c in (hist or {}).items() if int(c)}


def merge(hists: Iterable[Sparse | None]) -> dict[int, int]:
    """Sum of several sparse histograms (e.g. all slots of a phase)."""
    out: dict[int, int] = {}
    for h in hists:
        for b, c in normalize(h).items():
            out[b] = out.get(b, 0) + c
    return out


def count(hist: Sparse | None) -> int:
    """Number of operations counted."""
    return sum(normalize(hist).values())


def percentile(hist: Sparse | None, q: float) -> float:
    """The q-th percentile (0 <= q <= 100) in ns, nearest rank, as its bucket's midpoint.

    Exact to within the bucket width (<= 1/64 of the value from the midpoint above 64 ns).
    Raises ValueError on an empty histogram.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    h = normalize(hist)
    n = sum(h.values())
    if n == 0:
        raise ValueError("percentile of an empty histogram")
    rank = max(1, math.ceil(q / 100 * n))
    seen = 0
    for b in sorted(h):
        seen += h[b]
        if seen >= rank:
            return bucket_value(b)
    return bucket_value(max(h))  # pragma: no cover - rank <= n always stops the loop


def mean(hist: Sparse | None) -> float:
    """Mean latency in ns (bucket midpoints weighted by counts)."""
    h = normalize(hist)
    n = sum(h.values())
    if n == 0:
        raise ValueError("mean of an empty histogram")
    return sum(bucket_value(b) * c for b, c in h.items()) / n


def latency_metrics(hist: Sparse | None) -> dict[str, float]:
    """lat_mean_us, lat_p50_us, lat_p90_us, lat_p99_us, lat_max_us; {} when nothing was counted."""
    h = normalize(hist)
    if not h:
        return {}
    us = 1e-3
    return {
        "lat_mean_us": mean(h) * us,
        "lat_p50_us": percentile(h, 50) * us,
        "lat_p90_us": percentile(h, 90) * us,
        "lat_p99_us": percentile(h, 99) * us,
        "lat_max_us": bucket_value(max(h)) * us,
    }
