"""Size and duration strings as people write them ("1GiB", "4k", "10s", "250ms")."""
from __future__ import annotations

import math
import re

# Upper bounds, checked when a plan is read so --dry-run catches them (docs/plan.md "Limits"):
# anything larger is a typo, and would fail later inside C (64-bit counters, ns deadlines).
MAX_SIZE = 2**50             # 1 PiB: bytes per slot, per block, per message
MAX_DURATION_S = 30 * 86400  # 30 days: durations, timeouts, stonewalls
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([kmgtp])(i?)b?|b)?\s*$", re.IGNORECASE)
_DUR_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|h)?\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DUR = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_size(value: object) -> int:
    """Bytes from an int or a size string, as fio reads sizes (its default kb_base = 1024).

    Every suffix is a power of 1024, in any case, with or without a trailing B: "4k", "4kb",
    "4KB", "4kB" and "4KiB" are all 4096, "1M" and "1MiB" 2**20. A plain number is bytes: write
    decimal sizes out ("4000"). (fio in its default mode reads "4KiB" as 4000; that quirk is
    not followed: KiB is 1024 everywhere here, as IEC defines it.)
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 4k or 1GiB, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size must not be negative, got {value}")
        return _max_size(value, value)
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 4k or 1GiB, got {value!r}")
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"not a size: {value!r} (try 4k, 64KiB, 1MiB, 1GiB)")
    num, unit, _ = m.groups()
    result = float(num) * 1024 ** _POW[(unit or "").lower()]
    if result > MAX_SIZE:             # before int(): may be inf
        raise ValueError(f"size {value!r} is more than the limit of 1PiB")
    if result != int(result):
        raise ValueError(f"size {value!r} is not a whole number of bytes")
    return _max_size(int(result), value)


def _max_size(n: int, value: object) -> int:
    if n > MAX_SIZE:
        raise ValueError(f"size {value!r} is more than the limit of 1PiB")
    return n


def parse_duration(value: object) -> float:
    """Seconds from a number (seconds) or a duration string ("10s", "250ms", "2m")."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 10s or 500ms, got {value!r}")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"expected a finite duration such as 10s, got {value!r}")
        if value < 0:
            raise ValueError(f"duration must not be negative, got {value}")
        if value > MAX_DURATION_S:    # before float(): a huge int does not convert
            return _max_duration(value, value)
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration such as 10s or 500ms, got {value!r}")
    m = _DUR_RE.match(value)
    if not m:
        raise ValueError(f"not a duration: {value!r} (try 10s, 500ms, 2m)")
    num, unit = m.groups()
    return _max_duration(float(num) * _DUR[unit.lower() if unit else None], value)


def _max_duration(seconds: float | int, value: object) -> float:
    if seconds > MAX_DURATION_S:
        raise ValueError(f"duration {value!r} is more than the limit of 30 days")
    return seconds


def format_size(n: float) -> str:
    """Binary units, the way the sizes were most likely written."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f}{unit}" if unit == "B" or n == int(n) else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n}"


def plural(n: object, word: str) -> str:
    """A count and its noun as people write them: "1 worker", "2 workers", "0 phases"."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_rate(bytes_per_s: float) -> str:
    """Bandwidth in MiB/s or GiB/s (as fio and IOR print them)."""
    mib = bytes_per_s / 2**20
    return f"{mib / 1024:.2f} GiB/s" if mib >= 10240 else f"{mib:.1f} MiB/s"


def format_duration(seconds: float) -> str:
    """Compact human duration for tables: ns, us, ms, s."""
    a = abs(seconds)
    if a < 1e-6:
        return f"{seconds * 1e9:.0f}ns"
    if a < 1e-3:
        return f"{seconds * 1e6:.1f}us"
    if a < 1:
        return f"{seconds * 1e3:.2f}ms"
    return f"{seconds:.3f}s"


# -- units a tool prints after a figure (a command's metric regex may capture one) ------------------
# base unit of each family: what values are converted to and stored in
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_PRINTED_RE = re.compile(r"^\s*([kKMGTP]?i?(?:B|b|bit|bits|byte|bytes|FLOPS|flops|Flops|flop/s|"
                         r"Flop/s|ops|IOPS|iops)(?:/s|/sec|ps)?|ns|us|µs|ms|s|sec|secs|seconds|"
                         r"min|h)(?![\w/])")
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
               "secs": 1.0, "seconds": 1.0, "min": 60.0, "h": 3600.0}


def parse_unit(text: str) -> tuple[str, float] | None:
    """(base unit, factor to it) of a unit as tools print it: "MB/s" -> ("B/s", 1e6),
    "GiB/s" -> ("B/s", 2**30), "Gbit/s" -> ("B/s", 1.25e8), "ms" -> ("s", 1e-3),
    "GFLOPS" -> ("FLOPS", 1e9), "kIOPS" -> ("ops/s", 1e3), "MiB" -> ("B", 2**20); None when
    unknown. A decimal prefix is a power of 1000 here (as the tools that print MB/s mean it),
    Ki/Mi/Gi powers of 1024."""
    t = text.strip()
    if t in _TIME_UNITS:
        return "s", _TIME_UNITS[t]
    m = re.fullmatch(r"([kKMGTP]i?)?(B|b|bit|bits|byte|bytes|FLOPS|flops|Flops|flop/s|Flop/s|"
                     r"ops|IOPS|iops)(/s|/sec|ps)?", t)
    if not m:
        return None
    prefix, what, per = m.group(1) or "", m.group(2), m.group(3)
    f = _PREFIX[prefix]
    if what.lower() in ("flops", "flop/s"):
        return "FLOPS", f
    if what.upper() == "IOPS" or (what == "ops" and per):
        return "ops/s", f
    if what == "ops":
        return "ops", f
    if what in ("b", "bit", "bits"):
        f /= 8
    return ("B/s" if per else "B"), f


def printed_unit(text: str) -> str:
    """The unit a tool printed at the start of `text` (what follows a figure), or ""."""
    m = _PRINTED_RE.match(text)
    return m.group(1) if m else ""
