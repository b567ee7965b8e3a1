"""How report cells write values: durations, counts and rates, parameters as plans write them."""
from __future__ import annotations

import json
from typing import Any, Callable

from ..analysis import Dist, Spread
from ..kernels import kernel
from ..units import format_duration, format_rate, format_size

DASH = "-"


def ns(x: float | None) -> str:
    return DASH if x is None else format_duration(x / 1e9)


def secs(x: float | None) -> str:
    return DASH if x is None else format_duration(x)


def count(x: float | None) -> str:
    """Counts and rates: plain below 10,000, else k/M/G with 3 significant digits."""
    if x is None:
        return DASH
    for limit, div, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(x) >= limit:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.0f}" if x == int(x) or abs(x) >= 100 else f"{x:.3g}"


def dist(d: Dist | None, f: Callable[[float | None], str], p99: bool = True) -> str:
    if d is None:
        return DASH
    parts = [d.median, d.p99, d.max] if p99 else [d.median, d.max]
    return " / ".join(f(x) for x in parts)


def spread(s: Spread | None, f: Callable[[float | None], str]) -> str:
    return DASH if s is None else " / ".join(f(x) for x in (s.min, s.median, s.max))


def rate_spread(s: Spread | None) -> str:
    """Median rate, then the range over phases in the median's unit: 1.2 GiB/s (1.1-1.3)."""
    if s is None:
        return DASH
    med = format_rate(s.median)
    if s.n == 1 or s.min == s.max:
        return med
    div = 2**30 if med.endswith("GiB/s") else 2**20
    prec = 2 if div == 2**30 else 1
    return f"{med} ({s.min / div:.{prec}f}-{s.max / div:.{prec}f})"


def plural(n: Any, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def param_formatter(kernel_name: str, name: str) -> Callable[[Any], str]:
    """Show a parsed parameter the way people write it (sizes in KiB/MiB, durations in s)."""
    p = kernel(kernel_name).params.get(name)
    kind = p.kind if p is not None else ""   # commands, kernels of other versions: as given
    if kind == "size":
        fmt: Callable[[Any], str] = format_size
    elif kind == "duration":
        fmt = format_duration
    else:
        return lambda v: DASH if v is None else v if isinstance(v, str) else json.dumps(v, default=str)
    return lambda v: DASH if v is None else fmt(v) if isinstance(v, (int, float)) else str(v)


def swept(points: list, skip: tuple[str, ...] = ()) -> list[str]:
    """The parameters whose value differs between the points (the swept ones), in order."""
    keys: list[str] = []
    for s in points:
        keys += [k for k in s.params if k not in keys and k not in skip]
    dump = lambda v: json.dumps(v, sort_keys=True, default=str)   # noqa: E731
    return [k for k in keys if len({dump(s.params.get(k)) for s in points}) > 1]
