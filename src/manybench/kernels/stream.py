"""`mem.stream`: McCalpin's STREAM (Copy, Scale, Add, Triad) as a slot kernel.

The C side (native/stream.c) has STREAM's loops, timing and checkSTREAMresults. Before T0
(prepare) the three arrays are allocated (one block, laid out as stream.c's static arrays)
and first-touched by the threads that will run the loops; the timed window is the `ntimes`
iterations of the four kernels; the results are checked after the end stamp. The figures are computed here exactly as STREAM prints them:
per kernel, the best rate over iterations 2..ntimes (the first is left out) in MB/s with
MB = 10^6 bytes and 16, 16, 24, 24 bytes per element for Copy, Scale, Add, Triad, and the
average, minimum and maximum time of the same iterations.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..inventory.caches import Cache, cache_total, describe, node_caches
from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param, Standalone
from .facts import Fact
from .figures import LOWER, STREAM_RATES, Figure
from .native import native, result_from_native

NAMES = ("copy", "scale", "add", "triad")
BYTES_PER_ELEMENT = (2 * 8, 2 * 8, 3 * 8, 3 * 8)   # STREAM's bytes[] for 8-byte elements
# a grows 15x per iteration from 2.0 (c = a; b = 3c; c = a + b; a = b + 3c) and overflows a
# double after 261 iterations, where STREAM's own check would fail too
MAX_NTIMES = 250
STREAM_DEFAULT = 10_000_000   # stream.c's STREAM_ARRAY_SIZE
GIVEN = "elements given"
ROUND = 1_000_000             # the rule's size rounded up to whole millions, as STREAM's examples


def sized(caches: tuple[Cache, ...]) -> tuple[int, str]:
    """The default elements per array and why: STREAM's rule ("each array must be at least 4
    times the size of the available cache memory") against these caches, at least STREAM's
    default."""
    total = cache_total(caches)
    if not total:
        return STREAM_DEFAULT, "STREAM's default (the node's caches are not known)"
    need = 4 * total / 8
    rule = -(-int(need) // ROUND) * ROUND
    what = f"4 x {total / 1e6:.1f} MB of data caches ({describe(caches)})"
    if rule < STREAM_DEFAULT:
        return STREAM_DEFAULT, f"STREAM's default (its rule, {what}, asks for less)"
    return rule, f"STREAM's rule: each array at least {what}"


def affinity_cpus() -> int:
    """How many cpus this slot may run on now (its placement's affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except OSError:  # pragma: no cover - Linux always has it
        return os.cpu_count() or 1


def check_threads(kernel: str, threads: int) -> None:
    """OpenMP threads need as many cpus in the slot's affinity: say how to get them."""
    cpus = affinity_cpus()
    if threads > cpus:
        raise KernelError(
            f"{kernel}: threads = {threads} but this slot may run on {cpus} cpu"
            f"{'s' if cpus != 1 else ''} (placement pin = \"core\" gives each slot one cpu); "
            "use pin = \"numa\" (a NUMA node's cpus per slot) or pin = \"none\" in "
            f"[placement], or threads <= {cpus}")


def threads_fit(params: dict, workers: int, slot_cpus: int | None) -> list[tuple[str, str]]:
    """check_threads at plan check, when the placement fixes the slot's cpus."""
    threads = params.get("threads") or 1
    if slot_cpus is None or threads <= slot_cpus:
        return []
    return [("threads", f"threads = {threads} but pin = \"core\" gives each slot {slot_cpus} "
                        f"cpu{'s' if slot_cpus != 1 else ''}; use pin = \"numa\" or \"none\" "
                        f"or cpus = {threads} in [placement], or threads <= {slot_cpus}")]


def mem_available() -> int | None:
    """Bytes the kernel says can be allocated without swapping (MemAvailable), if known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(kernel: str, need: int, what: str, fix: str) -> None:
    """Refuse before allocating what the node cannot hold: touching it would page or wake the
    OOM killer, which takes the slot (and its phase) down instead of reporting an error."""
    avail = mem_available()
    if avail is not None and need > avail:
        raise KernelError(f"{kernel}: {what} need {need / 1e6:.0f} MB but only "
                          f"{avail / 1e6:.0f} MB are available on this node; {fix}")


PARAMS = {
    "elements": Param("int", "Elements (8-byte doubles) per array; each slot has three arrays "
                             "(24 bytes per element in all). Default: STREAM's rule, each array "
                             "at least 4x the node's data caches (every level, each shared "
                             "instance once, from sysfs; the last level's total among them), "
                             "rounded up to a whole million elements and never below STREAM's "
                             f"default {STREAM_DEFAULT:,}; the record says the size and why "
                             "(stream_sizing). Smaller arrays measure cache bandwidth.",
                     minimum=1000, maximum=2**40),
    "threads": Param("int", "OpenMP threads per slot (STREAM's OMP_NUM_THREADS); they run on "
                            "the slot's cpus, so more than one needs placement pin = \"numa\" "
                            "or \"none\". With 1, no OpenMP at all.", default=1, minimum=1),
    "ntimes": Param("int", f"Iterations of the four kernels (STREAM's NTIMES); the first is not "
                           f"counted in the figures. At most {MAX_NTIMES}.",
                    default=10, minimum=2),
}


def _check(params: dict) -> list[tuple[str, str]]:
    n = params.get("ntimes")
    if n is not None and n > MAX_NTIMES:
        return [("ntimes", f"at most {MAX_NTIMES}: STREAM's values grow 15x per iteration and "
                           "overflow a double after 261 (use more elements for a longer run)")]
    return []


@dataclass
class _State:
    lib: ModuleType
    handle: Any
    elements: int
    threads: int
    ntimes: int
    why: str


def _value(params: dict, name: str) -> int:
    v = params.get(name)
    return PARAMS[name].parse(PARAMS[name].default if v is None else v)


def elements_of(params: dict, caches: tuple[Cache, ...] | None = None) -> tuple[int, str]:
    """The elements per array and why: `elements` when given, else sized() on the node's
    caches (or those given)."""
    if params.get("elements") is not None:
        return PARAMS["elements"].parse(params["elements"]), GIVEN
    return sized(node_caches() if caches is None else caches)


def sizing(elements: int, why: str) -> dict[str, Any]:
    """The record's facts of the array size (FACTS)."""
    return {"stream_elements": elements, "stream_array_bytes": 8 * elements,
            "stream_sizing": f"{elements:,} elements = {8 * elements / 1e6:.1f} MB per array: "
                             f"{why}"}


def _checked(params: dict) -> tuple[int, int, int, str]:
    """elements, threads, ntimes and why that many elements, checked against the slot's cpus
    and the node's memory."""
    elements, why = elements_of(params)
    threads, ntimes = (_value(params, k) for k in ("threads", "ntimes"))
    for fld, msg in _check({"ntimes": ntimes}):
        raise KernelError(f"mem.stream: {fld}: {msg}")
    check_threads("mem.stream", threads)
    check_memory("mem.stream", 3 * 8 * elements, f"3 arrays of {elements} doubles",
                 "use fewer elements")
    return elements, threads, ntimes, why


def _prepare(ctx: SlotContext, params: dict) -> _State:
    lib = native()
    elements, threads, ntimes, why = _checked(params)
    try:
        handle = lib.stream_new(elements, threads)
    except OSError as e:
        raise KernelError(f"{e.strerror} (3 arrays of {elements} doubles = "
                          f"{3 * 8 * elements / 1e6:.0f} MB for this slot: use fewer "
                          "elements)") from None
    return _State(lib, handle, elements, threads, ntimes, why)


def figures(times_ns: list | tuple, elements: int) -> dict[str, float]:
    """STREAM's summary of per-iteration times (ns) of the four kernels: for each, the best
    rate in MB/s over iterations 2..ntimes, and their average, minimum and maximum time."""
    out: dict[str, float] = {}
    for name, per_elem, times in zip(NAMES, BYTES_PER_ELEMENT, times_ns):
        counted = list(times)[1:]   # the first iteration is not counted
        if not counted:
            continue
        # averaged in ns, then scaled: a sum of seconds can round below the minimum
        best = min(counted) / 1e9
        nbytes = per_elem * elements
        out[f"{name}_mb_s"] = 1.0e-6 * nbytes / best if best > 0 else float("inf")
        out[f"{name}_avg_s"] = sum(counted) / len(counted) / 1e9
        out[f"{name}_min_s"] = best
        out[f"{name}_max_s"] = max(counted) / 1e9
    return out


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    d = st.lib.stream_run(st.handle, st.ntimes, t0_ns, spin_ns)
    return result_from_native(d, metrics=figures(d["times_ns"], st.elements),
                              extra=sizing(st.elements, st.why))


def _standalone_args(ctx: SlotContext, params: dict) -> dict:
    elements, threads, ntimes, why = _checked(params)
    # given: mbkernel ignores it; finish says why from it, as the plain run's record does
    return {"elements": elements, "threads": threads, "ntimes": ntimes,
            "given": int(why == GIVEN)}


def _standalone_finish(d: dict, args: dict) -> Result:
    why = GIVEN if args.get("given") else elements_of({})[1]
    return result_from_native(d, metrics=figures(d["times_ns"], args["elements"]),
                              extra=sizing(args["elements"], why))


def _cleanup(st: _State) -> None:
    if st.handle is not None:
        handle, st.handle = st.handle, None
        st.lib.stream_release(handle)


FACTS = (Fact("stream_sizing", "STREAM arrays", note="elements and bytes per array, and why: "
              "given, or STREAM's rule against the node's caches"),
         Fact("stream_elements", "STREAM elements", note="elements (8-byte doubles) per array"),
         Fact("stream_array_bytes", "STREAM array bytes", note="bytes per array"))

# triad and copy first (the usual headline), then the rest; each kernel's times per iteration
FIGURES = tuple(f.first() if f.name.startswith(("triad", "copy")) else f for f in STREAM_RATES) \
    + tuple(Figure(f"{k}_{s}_s", "s", f"{k} {s} time", LOWER) for k in NAMES
            for s in ("avg", "min", "max"))

STREAM = Kernel(
    name="mem.stream",
    figures=FIGURES,
    doc="McCalpin's STREAM per slot: Copy (c = a), Scale (b = 3c), Add (c = a + b) and Triad "
        "(a = b + 3c) over three arrays of `elements` doubles, `ntimes` iterations timed in C "
        "from T0. Arrays are allocated and first-touched before T0 by the slot's own threads. "
        "Metrics as STREAM prints them: copy_mb_s, scale_mb_s, add_mb_s, triad_mb_s (best rate "
        "of iterations 2..ntimes, MB = 10^6 bytes) and <kernel>_avg_s/_min_s/_max_s; results "
        "are checked as checkSTREAMresults does (a wrong array makes the record an error). "
        "bytes = all bytes the kernels moved, ops = 4 x ntimes. Arrays sized by STREAM's rule "
        "unless `elements` is given; the record says the size and why (stream_sizing).",
    params=PARAMS, prepare=_prepare, run=_run, cleanup=_cleanup, check=_check,
    check_placement=threads_fit, facts=FACTS,
    standalone=Standalone(args=_standalone_args, finish=_standalone_finish),
    progress="bytes",
)

KERNELS = [STREAM]
