"""The node's data caches from sysfs (/sys/devices/system/cpu/cpu*/cache/index*), each shared
instance once: what STREAM's sizing rule ("each array must be at least 4 times the size of the
available cache memory") is measured against."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .topology import parse_cpulist

SYSFS_CPU = "/sys/devices/system/cpu"


@dataclass(frozen=True)
class Cache:
    level: int
    kind: str               # Data | Unified (instruction caches hold no array)
    size: int               # bytes
    cpus: tuple[int, ...]   # the cpus sharing this instance


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def _size(text: str) -> int:
    """sysfs's "48K", "32768K", "1M" -> bytes."""
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:].upper(), 1)
    return int(text.rstrip("KkMmGg")) * mult


def node_caches(root: str = SYSFS_CPU) -> tuple[Cache, ...]:
    """Every data or unified cache instance of the node's cpus (all of them, not only this
    process's affinity: the arrays go through the node's caches), a shared one once."""
    seen: dict[tuple[int, str, tuple[int, ...]], Cache] = {}
    try:
        names = os.listdir(root)
    except OSError:
        return ()
    for name in names:
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        base = os.path.join(root, name, "cache")
        try:
            indexes = [i for i in os.listdir(base) if i.startswith("index")]
        except OSError:
            continue
        for idx in indexes:
            d = os.path.join(base, idx)
            try:
                kind = _read(f"{d}/type")
                if kind not in ("Data", "Unified"):
                    continue
                level = int(_read(f"{d}/level"))
                size = _size(_read(f"{d}/size"))
                cpus = tuple(parse_cpulist(_read(f"{d}/shared_cpu_list")) or [int(name[3:])])
            except (OSError, ValueError):
                continue
            seen.setdefault((level, kind, cpus), Cache(level, kind, size, cpus))
    return tuple(sorted(seen.values(), key=lambda c: (c.level, c.cpus)))


def cache_total(caches: tuple[Cache, ...]) -> int:
    """Bytes of all the node's data caches, each instance once."""
    return sum(c.size for c in caches)


def describe(caches: tuple[Cache, ...]) -> str:
    """"L1 2 x 48 KiB + L2 2 x 1024 KiB + L3 1 x 32768 KiB": per level, instances x size."""
    by: dict[tuple[int, int], int] = {}
    for c in caches:
        by[(c.level, c.size)] = by.get((c.level, c.size), 0) + 1
    return " + ".join(f"L{lvl} {n} x {size // 1024} KiB" for (lvl, size), n in sorted(by.items()))
