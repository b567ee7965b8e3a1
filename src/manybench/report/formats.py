"""How report cells write values: durations, counts and rates, parameters as plans write them."""
from __future__ import annotations

import json
from typing import Any, Callable

from ..kernels import kernel
from ..units import format_duration, format_size, plural   # noqa: F401 (plural: report's)

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
