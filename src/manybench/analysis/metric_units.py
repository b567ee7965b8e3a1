"""The unit a metric is shown in, read once for every view (tables, plots, `report --json`,
comparisons): from what its records say (a command's metric captured with its unit), its
declaration (kernels/figures.py), or its name.

A name that says its unit (`copy_mb_s`, `flush_us`, a label "MB/s per pair") is shown in
that unit, never rescaled: a column headed `x_mb_s` in GiB/s would name one unit and show
another. Any other byte rate or time is given in its base unit (B/s, s), which a column
scales from its range (report/colunits.py); other units (GFLOPS, ops/s, a count) as declared.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from ..kernels import kernel
from ..units import parse_unit

# a unit that is a multiple of seconds is given in seconds
TIMES = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
# name endings that say a unit (`x_mb_s`): the unit they name
_NAMED = (("_mb_s", "MB/s"), ("_mbs", "MB/s"), ("_gb_s", "GB/s"), ("_kb_s", "kB/s"),
          ("_mib_s", "MiB/s"), ("_gib_s", "GiB/s"), ("_kib_s", "KiB/s"),
          ("_gbit_s", "Gbit/s"), ("_mbit_s", "Mbit/s"), ("_gflops", "GFLOPS"),
          ("_mflops", "MFLOPS"), ("_ns", "ns"), ("_us", "us"), ("_ms", "ms"),
          ("_seconds", "s"), ("_sec", "s"), ("_s", "s"))
# endings of rates that name no unit beyond "per second": a count per second, prefixed k/M/G
_PER_S = ("_ops_s", "_per_s", "_bytes_s", "_bps", "_iops")


class Shown(NamedTuple):
    unit: str        # the unit its values are given in
    factor: float    # stored value x factor = the value in `unit`
    fixed: bool      # its name says the unit: a column never rescales it


def named_unit(text: str) -> str | None:
    """The unit a metric's name or label says: "copy_mb_s" -> "MB/s", "MB/s per pair" ->
    "MB/s"; None when it says none."""
    low = "_" + text.lower()
    if not low.endswith(_PER_S):
        for ending, unit in _NAMED:
            if low.endswith(ending) and len(low) > len(ending) + 1:
                return unit
    for word in text.split():
        if "/" in word and parse_unit(word) is not None:
            return word
    return None


def _to(unit: str) -> tuple[str, float] | None:
    """(base, factor) of a byte rate or a time unit, None for others."""
    if unit in TIMES:
        return "s", TIMES[unit]
    got = parse_unit(unit)
    return got if got is not None and got[0] == "B/s" else None


@functools.lru_cache(maxsize=4096)
def _declared(kernel_name: str, name: str) -> Shown:
    fig = kernel(kernel_name).figure(name)
    if fig is None:
        named = named_unit(name)
        return Shown(named, 1.0, True) if named is not None else Shown("", 1.0, False)
    if fig.fixed_unit or named_unit(fig.title.replace("\n", " ")) is not None:
        return Shown(fig.unit, 1.0, True)
    base = _to(fig.unit)
    if base is not None:
        return Shown(base[0], base[1], False)
    return Shown(fig.unit, 1.0, False)


def shown_unit(kernel_name: str, name: str, units: dict[str, str] | None = None) -> Shown:
    """How a metric's values are given (see the module docstring). units: what a point's
    records say a command's metric is stored in (PointSummary.units: a base unit)."""
    stored = (units or {}).get(name)
    if not stored:
        return _declared(kernel_name, name)
    named = named_unit(name)
    if named is not None:        # captured in a base unit, shown in the one its name says
        to_named, base_of_stored = _to(named), _to(stored) or (stored, 1.0)
        if to_named is not None and to_named[0] == base_of_stored[0]:
            return Shown(named, base_of_stored[1] / to_named[1], True)
    base = _to(stored)
    return Shown(base[0], base[1], False) if base is not None else Shown(stored, 1.0, False)


def metric_unit(kernel_name: str, name: str, units: dict[str, str] | None = None
                ) -> tuple[str, float]:
    """(unit, factor from the stored value): shown_unit without whether it is fixed."""
    s = shown_unit(kernel_name, name, units)
    return s.unit, s.factor
