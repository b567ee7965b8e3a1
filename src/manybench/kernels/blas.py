"""The BLAS cpu.dgemm uses: found, described, checked against the processor, or chosen.

Found at run time (dlopen, native/dgemm.c): the plan's `blas`, else the usual system sonames,
else the OpenBLAS numpy's wheels carry. Described by what the library says of itself: its
file, version and build config (openblas_get_config), the core whose kernels it runs
(openblas_get_corename) and its thread count. Checked: a library running kernels narrower
than the processor's FMA pipes (an OpenBLAS that does not know the cpu falls back to an old
core such as Prescott: SSE3, a fifth of the speed) is a `library` warning, since its GFLOPS are
the library's, not the machine's. `blas = "best"` times every candidate on the slot's own core
before T0 and keeps the fastest, recording the trial.
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
from types import ModuleType
from typing import Any

from ..inventory.cpu_peak import core_flops, parse_cpuinfo
from .base import KernelError
from .facts import Fact

NAME = "cpu.dgemm"
BEST = "best"
# Tried in this order when the plan gives no `blas`. Debian's libblas.so.3 (alternatives)
# carries cblas_dgemm, whether it is the reference BLAS or OpenBLAS behind it.
SYSTEM_LIBS = ("libopenblas.so.0", "libopenblas.so", "libblis.so.4", "libcblas.so.3",
               "libblas.so.3")
# Read by the libraries when they load (only the first load in a process counts); the
# library's own call sets the count again at every prepare.
THREAD_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "BLIS_NUM_THREADS",
              "MKL_NUM_THREADS")
TRIAL_NS = 100_000_000       # `blas = "best"`: each candidate is timed for about this long

# OpenBLAS cores (openblas_get_corename, lower case) -> (vector bits of their DGEMM kernels,
# fused multiply-add); x86 only: another architecture's core is not judged
_CORES = {**{c: (512, True) for c in ("skylakex", "cooperlake", "sapphirerapids")},
          **{c: (256, True) for c in ("haswell", "zen", "excavator")},
          **{c: (256, False) for c in ("sandybridge", "bulldozer", "piledriver",
                                       "steamroller")},
          **{c: (128, False) for c in ("prescott", "core2", "penryn", "dunnington", "nehalem",
                                       "atom", "opteron", "opteron_sse3", "barcelona",
                                       "bobcat", "nano", "katmai", "coppermine", "northwood",
                                       "banias", "athlon")}}


@functools.lru_cache(maxsize=1)
def numpy_blas() -> tuple[str, ...]:
    """The OpenBLAS files inside an installed numpy wheel, found without importing numpy."""
    try:
        spec = importlib.util.find_spec("numpy")
    except (ImportError, ValueError):
        return ()
    if spec is None or not spec.origin:
        return ()
    pkg = os.path.dirname(spec.origin)
    found: list[str] = []
    for d in (os.path.join(os.path.dirname(pkg), "numpy.libs"), os.path.join(pkg, ".libs")):
        found += sorted(glob.glob(os.path.join(d, "lib*openblas*.so*")))
    return tuple(found)


def candidates(blas: str | None) -> list[str]:
    return [blas] if blas and blas != BEST else [*SYSTEM_LIBS, *numpy_blas()]


def _with_thread_env(threads: int, fn: Any) -> Any:
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update({k: str(threads) for k in THREAD_ENV})
    try:
        return fn()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load(lib: ModuleType, blas: str | None, threads: int) -> dict[str, Any]:
    """The first usable CBLAS (the loader's info dict); KernelError saying what was tried."""
    why = ""

    def first() -> dict[str, Any] | None:
        nonlocal why
        for path in candidates(blas):
            try:
                return lib.blas_load(path)
            except OSError as e:
                why = e.strerror or str(e)
        return None
    got = _with_thread_env(threads, first)
    if got is not None:
        return got
    if blas and blas != BEST:
        raise KernelError(f"{NAME}: cannot use blas = {blas!r}: {why}")
    raise KernelError(f"{NAME}: no CBLAS library found (tried {', '.join(SYSTEM_LIBS)} and "
                      "numpy's bundled OpenBLAS); install one (Debian/Ubuntu: libopenblas0, "
                      "RHEL: openblas) or give `blas` = the library's path")


def loadable(lib: ModuleType, threads: int) -> list[dict[str, Any]]:
    """Every candidate that loads, one per distinct file."""
    out: dict[str, dict[str, Any]] = {}

    def each() -> None:
        for path in candidates(None):
            try:
                info = lib.blas_load(path)
            except OSError:
                continue
            out.setdefault(info["file"], info)
    _with_thread_env(threads, each)
    return list(out.values())


def version(config: str) -> str:
    """The library's version from its config string ("OpenBLAS 0.3.21 ..." -> "0.3.21")."""
    m = re.search(r"OpenBLAS\s+(\S+)", config or "")
    if m:
        return m.group(1)
    m = re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", config or "")
    return m.group(1) if m else ""


# what the report and `report --json` show of provenance() beside the figure
FACTS = (Fact("blas", "BLAS library", note="the CBLAS file the products ran in"),
         Fact("blas_version", "BLAS version"),
         Fact("blas_core", "BLAS core", note="the core whose kernels the library runs "
              "(openblas_get_corename): an older core than the cpu's runs narrower kernels"),
         Fact("blas_threads_used", "BLAS threads"))


def provenance(lib: ModuleType, info: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps of the library: file, version, config, core, threads."""
    used = lib.blas_get_threads(info["index"])
    return {"blas": info["file"], "blas_symbol": info["symbol"], "blas_config": info["config"],
            "blas_version": version(info["config"]), "blas_core": info.get("corename", ""),
            "blas_threads": info["threads"] or "env",
            "blas_threads_used": used if used >= 0 else None}


@functools.lru_cache(maxsize=1)
def _this_cpu() -> dict[str, Any]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return parse_cpuinfo(f.read())
    except OSError:
        return parse_cpuinfo("")


def core_mismatch(corename: str, config: str, cpu: dict[str, Any] | None = None) -> str | None:
    """The warning when the library's kernels are narrower than this processor's FMA pipes (or
    lack FMA it has), else None. cpu: parse_cpuinfo's dict (default: this machine's)."""
    core = _CORES.get((corename or "").lower())
    cpu = _this_cpu() if cpu is None else cpu
    if core is None or cpu.get("arch") != "x86" or not cpu.get("flags"):
        return None
    bits, fma = core
    have = core_flops(cpu)
    if bits >= have.width_bits and (fma or not have.fma):
        return None
    what = f"OpenBLAS {version(config)}".strip() if "OpenBLAS" in (config or "") else "the BLAS"
    return (f"{NAME}: {what} runs its {corename} kernels ({bits}-bit"
            f"{', FMA' if fma else ', no FMA'}) on a cpu with {have.isa} and "
            f"{have.units} x {have.width_bits}-bit FMA pipes ({have.microarch}): the library "
            "does not know this processor, or OPENBLAS_CORETYPE forces an older core; its "
            "GFLOPS are far below the machine's. Use a newer BLAS (`blas` = its path) or "
            "`blas = \"best\"`")


def best(lib: ModuleType, threads: int, n: int, seed: int, alpha: float, beta: float
         ) -> tuple[dict[str, Any], dict[str, float]]:
    """`blas = "best"`: every loadable candidate timed on this core with the plan's n; the
    fastest one's info and every candidate's GFLOPS (by file)."""
    trials: dict[str, float] = {}
    infos = loadable(lib, threads)
    if not infos:
        load(lib, None, threads)     # raises, saying what was tried
    for info in infos:
        lib.blas_set_threads(info["index"], threads)
        try:
            h = lib.dgemm_new(info["index"], n, seed)
        except OSError as e:
            raise KernelError(f"{NAME}: n = {n}: {e.strerror or e}") from None
        lib.dgemm_time(h, 1, alpha, beta)          # warm-up: threads, buffers
        count, ns = 1, lib.dgemm_time(h, 1, alpha, beta)
        while ns < TRIAL_NS:
            count *= 2
            ns = lib.dgemm_time(h, count, alpha, beta)
        trials[info["file"]] = round(2.0 * n ** 3 * count / max(ns, 1), 3)
        del h
    chosen = max(infos, key=lambda i: trials[i["file"]])
    return chosen, trials
