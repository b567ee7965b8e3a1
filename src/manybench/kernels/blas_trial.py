"""`blas = "best"`'s trials: library x core type, each in a process of its own.

A BLAS picks its kernels when it loads: OpenBLAS's DYNAMIC_ARCH builds read
OPENBLAS_CORETYPE, BLIS reads BLIS_ARCH_TYPE, MKL reads MKL_ENABLE_INSTRUCTIONS, and a
library loaded once in a process keeps its first choice. So each trial is a child process
started with the variable set (and the slot's affinity, inherited), which loads the library,
says which core it runs (openblas_get_corename: a build without the requested core runs
another) and times the plan's product. Variants whose instructions the cpu lacks are never
started (they would die of SIGILL); a trial that dies anyway is recorded with its signal.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..config import timing

_AVX512 = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")
# (library family, variable, value, /proc/cpuinfo flags the variant's kernels need), fastest
# first. OpenBLAS: the x86_64 DYNAMIC_ARCH cores worth forcing on a cpu with AVX (the older
# ones run 128-bit kernels); BLIS: its configuration names; MKL: its instruction-set switch.
VARIANTS = (
    ("openblas", "OPENBLAS_CORETYPE", "SAPPHIRERAPIDS",
     (*_AVX512, "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")),
    ("openblas", "OPENBLAS_CORETYPE", "COOPERLAKE", (*_AVX512, "avx512_bf16")),
    ("openblas", "OPENBLAS_CORETYPE", "SKYLAKEX", _AVX512),
    ("openblas", "OPENBLAS_CORETYPE", "ZEN", ("avx2", "fma")),
    ("openblas", "OPENBLAS_CORETYPE", "HASWELL", ("avx2", "fma")),
    ("openblas", "OPENBLAS_CORETYPE", "SANDYBRIDGE", ("avx",)),
    ("blis", "BLIS_ARCH_TYPE", "skx", _AVX512),
    ("blis", "BLIS_ARCH_TYPE", "zen3", ("avx2", "fma")),
    ("blis", "BLIS_ARCH_TYPE", "haswell", ("avx2", "fma")),
    ("blis", "BLIS_ARCH_TYPE", "sandybridge", ("avx",)),
    ("mkl", "MKL_ENABLE_INSTRUCTIONS", "AVX512", _AVX512),
    ("mkl", "MKL_ENABLE_INSTRUCTIONS", "AVX2", ("avx2", "fma")),
    ("mkl", "MKL_ENABLE_INSTRUCTIONS", "AVX", ("avx",)),
)
KNOBS = tuple(sorted({v for _, v, _, _ in VARIANTS}))

# The child: load, say what runs, time about trial_ns of products; one JSON line. Its rate is
# taken over the process's CPU time per thread as well as the wall clock: on a shared
# machine the time the child is not running is not its library's.
CHILD = """
import json, sys, time
from manybench import _native as L
path, n, seed, alpha, beta, threads, trial_ns = sys.argv[1:8]
n, seed, threads, trial_ns = int(n), int(seed), int(threads), int(trial_ns)
alpha, beta = float(alpha), float(beta)
try:
    i = L.blas_load(path)
except OSError as e:
    sys.exit(print(json.dumps({"unloadable": e.strerror or str(e)})))
L.blas_set_threads(i["index"], threads)
h = L.dgemm_new(i["index"], n, seed)
L.dgemm_time(h, 1, alpha, beta)
count = 1
while True:
    cpu = time.process_time_ns()
    ns = L.dgemm_time(h, count, alpha, beta)
    cpu = time.process_time_ns() - cpu
    if ns >= trial_ns:
        break
    count *= 2
flops = 2.0 * n ** 3 * count
print(json.dumps({"file": i["file"], "config": i["config"], "core": i["corename"],
                  "gflops": round(flops / max(ns, 1), 3),
                  "cpu_gflops": round(flops * threads / max(cpu, 1), 3)}))
"""
FINALS = 0.8     # trials within this fraction of the fastest are timed again, in reverse order


@dataclass(frozen=True)
class Variant:
    """One way to load a library: its path and the variable that picks its kernels (none:
    "auto", the library's own choice, whatever the environment says)."""
    path: str
    env: tuple[tuple[str, str], ...] = ()

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.env) or "auto"


@dataclass
class Trial:
    variant: Variant
    file: str = ""
    config: str = ""
    core: str = ""
    gflops: float | None = None         # over the wall clock
    cpu_gflops: float | None = None     # over the child's CPU time per thread
    error: str = ""
    unloadable: str = ""     # not a candidate here (not found, no dgemm): not recorded
    round: int = 1

    @property
    def rate(self) -> float | None:
        """What trials are compared by: CPU-time GFLOPS when the child measured them."""
        return self.cpu_gflops if self.cpu_gflops is not None else self.gflops

    def record(self) -> dict[str, Any]:
        """What the record keeps of the trial (extra.blas_trials)."""
        out: dict[str, Any] = {"blas": self.file or self.variant.path,
                               "env": self.variant.label(), "core": self.core}
        if self.error:
            out["error"] = self.error
        else:
            out["gflops"] = self.gflops
            if self.cpu_gflops is not None:
                out["cpu_gflops"] = self.cpu_gflops
        return out | ({"round": self.round} if self.round > 1 else {})


def family(file: str, config: str) -> str:
    """openblas, blis, mkl or "" (no variants known), from what the library says of itself."""
    text = f"{os.path.basename(file)} {config}".lower()
    for name in ("openblas", "blis", "mkl"):
        if name in text:
            return name
    return ""


def variants(path: str, fam: str, config: str, flags: Iterable[str]) -> list[Variant]:
    """The forced variants of one library worth a trial on a cpu with these flags: only
    those whose instructions the cpu has; OpenBLAS only when built with DYNAMIC_ARCH (one
    core otherwise)."""
    have = set(flags)
    if fam == "openblas" and "DYNAMIC_ARCH" not in config:
        return []
    return [Variant(path, ((var, value),)) for f, var, value, need in VARIANTS
            if f == fam and have.issuperset(need)]


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def run_trial(v: Variant, threads: int, n: int, seed: int, alpha: float, beta: float,
              trial_ns: int, thread_env: Iterable[str]) -> Trial:
    """One trial in a child process; a child that fails or dies is a Trial with error."""
    env = {k: val for k, val in os.environ.items() if k not in KNOBS}
    env.update({k: str(threads) for k in thread_env})
    env.update(dict(v.env))
    argv = [sys.executable, "-c", CHILD, v.path, str(n), str(seed), repr(alpha), repr(beta),
            str(threads), str(trial_ns)]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env,
                           timeout=timing("kernels.blas_trial"), check=False)
    except subprocess.TimeoutExpired:
        return Trial(v, error=f"no answer in {timing('kernels.blas_trial'):g} s")
    if p.returncode < 0:
        return Trial(v, error=f"died of {_signal_name(p.returncode)}")
    lines = p.stdout.strip().splitlines()
    if p.returncode or not lines:
        why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return Trial(v, error=why)
    d = json.loads(lines[-1])
    if "unloadable" in d:
        return Trial(v, unloadable=d["unloadable"])
    return Trial(v, file=d["file"], config=d["config"], core=d["core"], gflops=d["gflops"],
                 cpu_gflops=d.get("cpu_gflops"))


def trials(paths: Iterable[str], flags: Iterable[str], trial: Callable[[Variant], Trial]
           ) -> list[Trial]:
    """Every library (once per file) as it loads on its own, then under each forced variant
    the cpu supports; then the leaders (within FINALS of the fastest) once more, in reverse
    order, so that one trial slowed by other load does not decide."""
    flags = set(flags)
    out: list[Trial] = []
    seen: set[str] = set()
    for path in paths:
        first = trial(Variant(path))
        if first.unloadable or (first.file and first.file in seen):
            continue          # not here, or another name of a file already tried
        seen.add(first.file)
        out.append(first)
        if first.error:
            continue
        for v in variants(first.file, family(first.file, first.config), first.config, flags):
            out.append(trial(v))
    top = fastest(out)
    if top is not None:
        for t in [t for t in out if not t.error and t.rate >= FINALS * top.rate][::-1]:
            again = trial(Variant(t.file or t.variant.path, t.variant.env))
            again.round = 2
            out.append(again)
    return out


def ranked(tried: list[Trial]) -> list[Trial]:
    """One trial per variant (its fastest), fastest first; failed trials left out."""
    best: dict[tuple[str, tuple], Trial] = {}
    for t in tried:
        if t.error or t.rate is None:
            continue
        key = (t.file, t.variant.env)
        if key not in best or t.rate > best[key].rate:
            best[key] = t
    return sorted(best.values(), key=lambda t: -t.rate)


def fastest(tried: list[Trial]) -> Trial | None:
    ok = [t for t in tried if not t.error and t.rate is not None]
    return max(ok, key=lambda t: t.rate) if ok else None
