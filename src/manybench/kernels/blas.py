"""The BLAS cpu.dgemm uses: found, described, checked against the processor, or chosen.

Found at run time (dlopen, native/dgemm.c): the plan's `blas`, else the usual system sonames,
else the OpenBLAS numpy's wheels carry. Described by what the library says of itself: its
file, version and build config (openblas_get_config), the core whose kernels it runs
(openblas_get_corename) and its thread count. Checked: a library running kernels narrower
than the processor's FMA pipes (an OpenBLAS that does not know the cpu falls back to an old
core such as Prescott: SSE3, a fifth of the speed) is a `library` warning, since its GFLOPS are
the library's, not the machine's; the warning names a core of the same library that ran
faster here (timed in trials) when one does. `blas = "best"` times every candidate library under
every core type the cpu supports (blas_trial.py), each in a process of its own on the slot's
cpus before T0, keeps the fastest and records every trial.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import importlib.util
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ..inventory.cpu_peak import core_flops, parse_cpuinfo
from . import blas_trial
from .base import KernelError
from .blas_trial import Trial, Variant
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
LOAD_TRIES = 3               # "best": the leaders tried in turn when one cannot run as tried
FASTER = 1.05                # a forced core this much faster than the library's own is named

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


@contextlib.contextmanager
def _environ(settings: dict[str, str | None]) -> Iterator[None]:
    """os.environ with these set (None: unset) while a library loads, then as it was."""
    saved = {k: os.environ.get(k) for k in settings}
    try:
        for k, v in settings.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _with_thread_env(threads: int, fn: Any) -> Any:
    with _environ({k: str(threads) for k in THREAD_ENV}):
        return fn()


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
    if got is not None:     # the variable that chose its kernels, when one was set
        return dict(got, env=" ".join(f"{k}={os.environ[k]}" for k in blas_trial.KNOBS
                                      if os.environ.get(k)))
    if blas and blas != BEST:
        raise KernelError(f"{NAME}: cannot use blas = {blas!r}: {why}")
    raise KernelError(f"{NAME}: no CBLAS library found (tried {', '.join(SYSTEM_LIBS)} and "
                      "numpy's bundled OpenBLAS); install one (Debian/Ubuntu: libopenblas0, "
                      "RHEL: openblas) or give `blas` = the library's path")


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
         Fact("blas_env", "BLAS core set by", note="the variable that chose the core "
              "(OPENBLAS_CORETYPE, BLIS_ARCH_TYPE, MKL_ENABLE_INSTRUCTIONS) when one was set: "
              "blas = \"best\"'s winner, or the run's environment"),
         Fact("blas_threads_used", "BLAS threads"))


def provenance(lib: ModuleType, info: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps of the library: file, version, config, core, threads."""
    used = lib.blas_get_threads(info["index"])
    return {"blas": info["file"], "blas_symbol": info["symbol"], "blas_config": info["config"],
            "blas_version": version(info["config"]), "blas_core": info.get("corename", ""),
            "blas_env": info.get("env", ""),
            "blas_threads": info["threads"] or "env",
            "blas_threads_used": used if used >= 0 else None}


@functools.lru_cache(maxsize=1)
def _this_cpu() -> dict[str, Any]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return parse_cpuinfo(f.read())
    except OSError:
        return parse_cpuinfo("")


def core_mismatch(corename: str, config: str, cpu: dict[str, Any] | None = None,
                  faster: tuple[Trial, Trial] | None = None, tried: int = 0) -> str | None:
    """The warning when the library's kernels are narrower than this processor's FMA pipes (or
    lack FMA it has), else None. cpu: parse_cpuinfo's dict (default: this machine's); faster:
    the trials of a core of the same library that ran faster here and of the library as it
    runs (faster_core: named as the advice);
    tried: with blas = "best", how many trials the library's core won."""
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
            "GFLOPS are below the machine's. " + _advice(faster, tried))


def _advice(faster: tuple[Trial, Trial] | None, tried: int) -> str:
    if faster is not None:
        win, own = faster
        return (f"{win.variant.label()} runs its {win.core} kernels faster here "
                f"({win.rate:.1f} GFLOPS in a trial against {own.rate or 0:.1f} as it runs "
                "now): set it in the run's environment, or "
                "`blas = \"best\"`, which tries each core")
    if tried:
        return (f"It was the fastest of the {tried} trials of `blas = \"best\"` (blas_trials): "
                "no wider core of the BLASes here ran faster")
    return ("Use a newer BLAS (`blas` = its path) or `blas = \"best\"`, which tries each "
            "library and core")


def _flags(cpu: dict[str, Any] | None) -> set[str]:
    return set((_this_cpu() if cpu is None else cpu).get("flags") or ())


def _timer(threads: int, n: int, seed: int, alpha: float, beta: float
           ) -> Callable[[Variant], Trial]:
    return lambda v: blas_trial.run_trial(v, threads, n, seed, alpha, beta, TRIAL_NS,
                                          THREAD_ENV)


def load_variant(lib: ModuleType, v: Variant, threads: int) -> dict[str, Any]:
    """Load v's library in this process with v's variable set (and the others of KNOBS
    unset: the trial ran so), restoring the environment after: the library has read it."""
    with _environ({**dict.fromkeys(blas_trial.KNOBS), **dict(v.env)}):
        return load(lib, v.path, threads)


def best(lib: ModuleType, threads: int, n: int, seed: int, alpha: float, beta: float,
         trial: Callable[[Variant], Trial] | None = None, cpu: dict[str, Any] | None = None
         ) -> tuple[dict[str, Any], list[dict[str, Any]], str | None]:
    """`blas = "best"`: every candidate library, as it loads and under each core type the
    cpu supports, timed in a process of its own on this slot's cpus with the plan's n; the
    fastest loaded here. Returns its info, every trial (as recorded) and a warning when this
    process could not load it as tried (the library was already loaded with another core)."""
    tried = blas_trial.trials(candidates(None), _flags(cpu),
                              trial or _timer(threads, n, seed, alpha, beta))
    ranked = blas_trial.ranked(tried)
    if not ranked:
        if not tried:
            load(lib, None, threads)     # raises, saying what was tried
        raise KernelError(f"{NAME}: blas = \"best\": every trial failed: " + "; ".join(
            f"{t.variant.path} {t.variant.label()}: {t.error}" for t in tried))
    info, ran = None, ranked[0]
    for t in ranked[:LOAD_TRIES]:
        info = _as_tried(lib, t, threads)
        if info is not None:
            ran = t
            break
    if info is None:    # none of the leaders runs here as tried: the fastest as it loads
        info = load_variant(lib, Variant(ran.file, ran.variant.env), threads)
    stale = None
    if ran is not ranked[0] or info.get("corename", "") != ran.core:
        top = ranked[0]
        stale = (f"{NAME}: blas = \"best\"'s fastest trial, {top.file} with "
                 f"{top.variant.label()} ({top.core} kernels, {top.rate:.1f} GFLOPS), cannot run "
                 "in this slot process, which loaded that library (or one it links) earlier "
                 f"under another core; it runs {info['file']} with {ran.variant.label()} "
                 f"({info.get('corename')} kernels, {ran.rate:.1f} GFLOPS in its trial)")
    return info, [t.record() for t in tried], stale


def _as_tried(lib: ModuleType, t: Trial, threads: int) -> dict[str, Any] | None:
    """t's library loaded here running t's core, else None. A slot process lives for the
    run: an earlier task may have loaded the file under another core, and then a private
    copy is a new instance, which reads the variable again (a wrapper such as libblas.so.3
    still runs the core of the library it links, already loaded)."""
    v = Variant(t.file or t.variant.path, t.variant.env)
    info = load_variant(lib, v, threads)
    if info.get("corename", "") == t.core:
        return info
    try:
        info = dict(load_copy(lib, v, threads), file=info["file"])
    except (OSError, KernelError):
        return None
    return info if info.get("corename", "") == t.core else None


def load_copy(lib: ModuleType, v: Variant, threads: int) -> dict[str, Any]:
    """v's library loaded from a private copy of its file (unlinked once loaded: the mapping
    stays), so that it initialises again under v's variable."""
    with tempfile.TemporaryDirectory(prefix="manybench-blas-") as d:
        copy = os.path.join(d, os.path.basename(v.path))
        shutil.copyfile(v.path, copy)
        return load_variant(lib, Variant(copy, v.env), threads)


def faster_core(lib_file: str, corename: str, config: str, threads: int, n: int, seed: int,
                alpha: float, beta: float, trial: Callable[[Variant], Trial] | None = None,
                cpu: dict[str, Any] | None = None) -> tuple[Trial, Trial] | None:
    """For the mismatch warning: the forced core of this library that runs faster here than
    the one it runs, and the trial of the one it runs (the library as this process's
    environment loads it), else None."""
    trial = trial or _timer(threads, n, seed, alpha, beta)
    own = Variant(lib_file, tuple((k, os.environ[k]) for k in blas_trial.KNOBS
                                  if k in os.environ))
    base = trial(own)
    fam = blas_trial.family(lib_file, config)
    forced = [trial(v) for v in blas_trial.variants(lib_file, fam, config, _flags(cpu))
              if v.env != own.env]
    win = blas_trial.fastest(forced)
    if win is None or win.core.lower() == corename.lower():
        return None
    if base.rate is not None and win.rate <= base.rate * FASTER:
        return None
    return win, base
