"""`cpu.dgemm`: double-precision matrix products through the node's own BLAS.

The library is found at run time (dlopen in native/dgemm.c), so manybench needs no BLAS to
build and measures the one each node really has: the plan's `blas`, else the usual system
sonames, else the OpenBLAS that numpy's wheels carry (ILP64, prefixed symbols). Which library,
its version, core and threads, and whether its core fits the processor: blas.py.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..extra_keys import BLAS_TRIALS, WARNINGS
from ..results.contract import WarningKind

from . import blas
from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param
from .blas import SYSTEM_LIBS, candidates, load, numpy_blas   # noqa: F401 (public names)
from .figures import GFLOPS
from .native import native, result_from_native

NAME = "cpu.dgemm"
CALIBRATE_NS = 50_000_000   # time at least this much of untimed calls to calibrate `repeat`

PARAMS = {
    "n": Param("int", "Matrix order: A, B and C are n x n doubles (3 * 8 * n^2 bytes per "
                      "slot).", default=1024, minimum=16),
    "repeat": Param("int", "dgemm calls in the timed window; 0 = as many as take about "
                           "`seconds` (calibrated before T0).", default=0, minimum=0),
    "seconds": Param("duration", "Target length of the window when `repeat` is 0.",
                     default="1s"),
    "threads": Param("int", "BLAS threads (openblas_set_num_threads and the like, and "
                            "OPENBLAS_NUM_THREADS before the library loads). More than one "
                            "needs a slot with as many cpus: pin = \"numa\" or \"none\".",
                     default=1, minimum=1),
    "blas": Param("str", "CBLAS library to use (a path or a soname); \"best\": time every "
                         "candidate library under every core type the cpu supports "
                         "(OPENBLAS_CORETYPE, BLIS_ARCH_TYPE, MKL_ENABLE_INSTRUCTIONS), each in "
                         "a process of its own on the slot's cpus before T0, and keep the "
                         "fastest; default: "
                         "the first of " + ", ".join(SYSTEM_LIBS) + ", then numpy's bundled "
                         "OpenBLAS."),
    "alpha": Param("float", "C = alpha*A*B + beta*C.", default=1.0),
    "beta": Param("float", "C = alpha*A*B + beta*C (0: C is only written, as numpy's "
                           "matmul).", default=0.0),
    "seed": Param("int", "Seed of the matrices' pseudo-random values in [-1, 1).", default=1,
                  maximum=2**63 - 1),
}


@functools.lru_cache(maxsize=8)
def _best(threads: int, n: int, seed: int, alpha: float, beta: float
          ) -> tuple[dict[str, Any], tuple[dict[str, Any], ...], str | None]:
    """`blas = "best"` once per slot process and matrix shape (each trial is a process of
    its own timed for ~0.1 s: a few seconds in all)."""
    info, trials, stale = blas.best(native(), threads, n, seed, alpha, beta)
    return info, tuple(trials), stale


@functools.lru_cache(maxsize=8)
def _faster(file: str, core: str, config: str, threads: int, n: int, seed: int, alpha: float,
            beta: float) -> tuple[blas.Trial, blas.Trial] | None:
    """A mismatched library's faster core, tried once per slot process and shape."""
    return blas.faster_core(file, core, config, threads, n, seed, alpha, beta)


@dataclass
class _State:
    lib: ModuleType
    handle: Any
    info: dict
    n: int
    repeat: int
    alpha: float
    beta: float
    threads: int
    trials: list = field(default_factory=list)   # blas = "best": every trial, as recorded
    warnings: list = field(default_factory=list)  # ["library", text] found before T0


def _params(params: dict) -> dict:
    out = dict(params)
    for name, spec in PARAMS.items():
        if out.get(name) is None and spec.default is not None:
            out[name] = spec.parse(spec.default)
    return out


def _prepare(ctx: SlotContext, params: dict) -> _State:
    lib = native()
    p = _params(params)
    n, threads = p["n"], p["threads"]
    cpus = len(os.sched_getaffinity(0))
    if threads > cpus:
        raise KernelError(f"{NAME}: threads = {threads} but this slot may run on {cpus} "
                          f"cpu{'s' if cpus != 1 else ''} only (pin = \"core\" gives each slot "
                          "one); use pin = \"numa\" or pin = \"none\", or fewer threads")
    alpha, beta = float(p["alpha"]), float(p["beta"])
    trials: list = []
    warnings: list = []
    if p.get("blas") == blas.BEST:
        info, tried, stale = _best(threads, n, p["seed"], alpha, beta)
        trials = list(tried)
        warnings += [[WarningKind.LIBRARY, stale]] if stale else []
        core = info.get("corename", "")
        mismatch = blas.core_mismatch(core, info["config"], tried=len(trials))
    else:
        info = load(lib, p.get("blas"), threads)
        core = info.get("corename", "")
        mismatch = blas.core_mismatch(core, info["config"])
        if mismatch:     # name the core that runs faster here, if one does (timed: before T0)
            faster = _faster(info["file"], core, info["config"], threads, n, p["seed"], alpha,
                             beta)
            mismatch = blas.core_mismatch(core, info["config"], faster=faster)
    warnings += [[WarningKind.LIBRARY, mismatch]] if mismatch else []
    lib.blas_set_threads(info["index"], threads)
    try:
        handle = lib.dgemm_new(info["index"], n, p["seed"])
    except OSError as e:
        raise KernelError(f"{NAME}: n = {n}: {e.strerror or e}") from None
    # Warm-up: starts the library's threads and touches its work buffers before T0.
    lib.dgemm_time(handle, 1, alpha, beta)
    repeat = p["repeat"]
    if not repeat:
        count, ns = 1, lib.dgemm_time(handle, 1, alpha, beta)
        target = p["seconds"] * 1e9
        while ns < min(CALIBRATE_NS, target):
            count *= 2
            ns = lib.dgemm_time(handle, count, alpha, beta)
        repeat = max(1, round(target / (max(ns, 1) / count)))
    return _State(lib=lib, handle=handle, info=info, n=n, repeat=repeat, alpha=alpha,
                  beta=beta, threads=threads, trials=trials,
                  warnings=warnings)


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    d = st.lib.run_dgemm(st.handle, st.repeat, st.alpha, st.beta, t0_ns, spin_ns)
    ok = not d.get("errno") and d["elapsed_ns"] > 0
    metrics = {"gflops": 2.0 * st.n ** 3 * d["ops"] / d["elapsed_ns"]} if ok else {}
    extra = blas.provenance(st.lib, st.info)
    if st.trials:     # blas = "best": what was tried, what was kept
        extra[BLAS_TRIALS] = [dict(t) for t in st.trials]
    if st.warnings:   # warnings (the coordinator stores them), and the record says so
        extra[WARNINGS] = [list(w) for w in st.warnings]
    return result_from_native(d, lambda err, text: f"{NAME}: {text}", metrics=metrics,
                              extra=extra)


def _cleanup(st: _State) -> None:
    st.handle = None   # frees the matrices


DGEMM = Kernel(
    name=NAME,
    figures=(GFLOPS.first(),),
    doc="Double-precision C = alpha*A*B + beta*C on n x n row-major matrices through the "
        "node's CBLAS (dlopen at run time: `blas`, else " + ", ".join(SYSTEM_LIBS) + ", else "
        "numpy's bundled OpenBLAS; 32- and 64-bit-integer ABIs). Matrices are filled and one "
        "untimed call warms up before T0; the window holds `repeat` calls. Metrics: gflops "
        "(2 n^3 repeat / elapsed), lat_* = time per call; ops = calls. The library used "
        "is kept in the record's extra: `blas` (its file), `blas_version`, `blas_config`, "
        "`blas_core` (the kernels it runs), `blas_env` (the variable that chose them), "
        "`blas_threads_used`, and `blas_trials` (every library x core tried) with "
        "blas = \"best\"; a core narrower than the processor's FMA pipes is a `library` "
        "warning.",
    params=PARAMS, prepare=_prepare, run=_run, cleanup=_cleanup, progress="ops",
    facts=blas.FACTS,
)

KERNELS = [DGEMM]
