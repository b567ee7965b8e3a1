"""This node's cpus as slots see them: id, physical core, package and NUMA node, from sysfs."""
from __future__ import annotations

import os
from functools import lru_cache

from ..node.wire_types import Cpu


def _read_int(path: str, default: int) -> int:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return default


def parse_cpulist(text: str) -> list[int]:
    """"0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format)."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


@lru_cache(maxsize=1)
def topology() -> tuple[Cpu, ...]:
    """The cpus this process may use, with core, package and NUMA node from sysfs."""
    allowed = sorted(os.sched_getaffinity(0))
    numa_of: dict[int, int] = {}
    base = "/sys/devices/system/node"
    if os.path.isdir(base):
        for name in os.listdir(base):
            if name.startswith("node") and name[4:].isdigit():
                try:
                    with open(f"{base}/{name}/cpulist") as f:
                        for c in parse_cpulist(f.read()):
                            numa_of[c] = int(name[4:])
                except OSError:
                    pass
    cpus = []
    for c in allowed:
        t = f"/sys/devices/system/cpu/cpu{c}/topology"
        cpus.append(Cpu(c, _read_int(f"{t}/core_id", c), _read_int(f"{t}/physical_package_id", 0),
                        numa_of.get(c, 0)))
    return tuple(cpus)
