"""The instructions this install's C kernels were built for, checked against this cpu before
the extension is loaded.

setup.py writes build_isa.json beside the package: the -march the kernels were compiled for
and the cpu flags (as /proc/cpuinfo names them) that -march lets the compiler use. A node
whose cpu lacks one of them would die of an illegal instruction (SIGILL) inside a kernel, or
anywhere in the extension, on a shared install built elsewhere; `check()` refuses it first,
with a message naming both. The default build (x86-64-v2, its hot loops cloned for v3 and
v4 and picked at load time) requires what every current x86-64 node has; MANYBENCH_MARCH=
native requires the build machine's own instruction sets.
"""
from __future__ import annotations

import functools
import json
import os

ISA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_isa.json")
CPUINFO = "/proc/cpuinfo"


class CpuMismatch(ImportError):
    """This cpu lacks instructions the C kernels were built for. An ImportError: whatever
    falls back when the extension is not built (the wire codec's Python hooks) falls back."""


def build_isa() -> dict:
    """{"march": ..., "flags": [...]} of this install ({} when the extension was not built
    by setup.py: no file, nothing to require)."""
    try:
        with open(ISA_FILE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def cpu_flags() -> set[str] | None:
    """The first processor's flags in /proc/cpuinfo (x86: "flags"), None where it has none
    (another architecture, no /proc)."""
    try:
        with open(CPUINFO) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return set(value.split())
    except OSError:
        return None
    return None


def mismatch(isa: dict, flags: set[str] | None) -> str | None:
    """Why a cpu with `flags` cannot run a build of `isa`, or None when it can (or when its
    flags cannot be read: nothing to compare)."""
    if flags is None:
        return None
    lacking = sorted(set(isa.get("flags", ())) - flags)
    if not lacking:
        return None
    return (f"this cpu cannot run manybench's C kernels: they were built for "
            f"-march={isa.get('march') or '?'}, which requires the cpu flags "
            f"{' '.join(sorted(isa['flags']))}; this cpu lacks {' '.join(lacking)} (its flags: "
            f"{' '.join(sorted(flags))}). Install manybench for this node's cpu: the default "
            "build (no MANYBENCH_MARCH) runs on every x86-64-v2 cpu.")


def running_cflags(info: dict) -> list[str]:
    """The compile flags of the code that runs here: the build's (`_native.build_info()`),
    with the -march of the clone this cpu runs (clones.h) when the hot loops are cloned. A C
    peer compiled with them does what those loops do here (the same instructions, the same
    fused multiply-adds: cpu.himeno's gosa to the last digit)."""
    clone = info.get("clone")
    if not clone or clone == "default":
        return list(info["cflags"])
    return [f"-march={clone}" if f.startswith("-march=") else f for f in info["cflags"]]


@functools.cache
def _mismatch_here() -> str | None:
    return mismatch(build_isa(), cpu_flags())


def refusal() -> str:
    """Why this cpu cannot run the build, as check() says it ("" when it can): a Dask node's
    Info carries it, so the coordinator refuses the node before asking anything more of it."""
    return _mismatch_here() or ""


def check() -> None:
    """CpuMismatch when this cpu lacks an instruction set the build requires (read once per
    process)."""
    why = refusal()
    if why:
        raise CpuMismatch(why)
