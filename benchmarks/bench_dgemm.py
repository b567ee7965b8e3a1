#!/usr/bin/env python3
"""cpu.dgemm against numpy's own matmul, measured in the same run.

    python benchmarks/bench_dgemm.py [--n 1024] [--threads 1,2] [--seconds 2] [--repeat 5]
                                     [--warmup 1]

Peer: numpy.matmul(A, B, out=C) on n x n float64 arrays (C = A*B, as cpu.dgemm's default
alpha = 1, beta = 0), in a process started with OPENBLAS_NUM_THREADS = threads; cpu.dgemm
runs through its own prepare/run in a process started with the same variable and the same
`threads`. Each measurement is a fresh process (two OpenBLAS thread pools in one process
would compete for the cores), both do one untimed warm-up call, then time about `seconds`
of calls. Both pinned as the slot is: one thread on slot 0's core (pin = core), more threads
on every cpu (pin = none, since a slot's threads follow its affinity). Rounds alternate which
tool goes first, the first round (pair) a warm-up that is not counted.

Two cpu.dgemm configurations are measured against the same numpy runs:
  default  the library cpu.dgemm finds on its own (the system's, e.g. libopenblas.so.0)
  same     blas = numpy's bundled OpenBLAS: the same library, so the ratio shows what the
           kernel's harness costs
Gate: the median of the per-round GFLOP/s ratios (cpu.dgemm / numpy) >= 0.9 for every
configuration and thread count; best-of-N printed beside it. Exit status 1 when a goal is
missed, 2 when numpy is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import harness
from harness import ENV, Goal, alternate, verdict

GOAL = 0.9

NUMPY = """
import json, sys, time
import numpy as np
n, seconds = int(sys.argv[1]), float(sys.argv[2])
rng = np.random.default_rng(1)
a, b = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, (n, n))
c = np.empty((n, n))
np.matmul(a, b, out=c)                      # warm-up
t = time.perf_counter_ns(); np.matmul(a, b, out=c); one = time.perf_counter_ns() - t
reps = max(1, round(seconds * 1e9 / max(one, 1)))
t = time.perf_counter_ns()
for _ in range(reps):
    np.matmul(a, b, out=c)
ns = time.perf_counter_ns() - t
print(json.dumps({"gflops": 2 * n ** 3 * reps / ns, "reps": reps}))
"""

OURS = """
import json, sys, time
from manybench import _native
from manybench.kernels import KERNELS, SlotContext
n, seconds, threads, blas = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
k = KERNELS["cpu.dgemm"]
ctx = SlotContext(run="b", node="local", slot=0, rank=0, workers=1, cpu=-1, scratch="", shared="")
params = {"n": n, "seconds": seconds, "threads": threads}
if blas:
    params["blas"] = blas
st = k.prepare(ctx, params)
try:
    cpu = time.process_time_ns()
    r = k.run(st, _native.now_ns() + 2_000_000, 0)
    cpu = time.process_time_ns() - cpu
finally:
    k.cleanup(st)
if r.status != "ok":
    sys.exit(r.error)
# cpu_gflops: the same work over the window's CPU time per thread (process_time: all threads)
print(json.dumps({"gflops": r.metrics["gflops"], "reps": r.ops, "blas": r.extra["blas"],
                  "cpu_gflops": 2.0 * n ** 3 * r.ops * threads / max(cpu, 1),
                  "core": r.extra["blas_core"], "env": r.extra.get("blas_env", "")}))
"""


def measure(code: str, threads: int, *args: str, env: dict | None = None) -> dict:
    """One measurement in a fresh process, pinned as the slot (see the module doc); env:
    the environment (default: this one's)."""
    env = {**(ENV if env is None else env), "OPENBLAS_NUM_THREADS": str(threads)}
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=env, timeout=600, preexec_fn=harness.pinned(affinity(threads)))
    if p.returncode != 0:
        sys.exit(f"measurement failed: {p.stderr.strip() or p.stdout.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def affinity(threads: int) -> tuple[int, ...]:
    """Slot 0's cpus in a one-worker phase: pin = core for one thread; pin = none for more
    (a slot's threads share its affinity, so several threads need more than one cpu)."""
    [aff] = harness.slot_affinity(1, pin="core" if threads == 1 else "none")
    return aff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--threads", default=f"1,{min(2, len(os.sched_getaffinity(0)))}",
                    help="comma-separated thread counts")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5, help="counted pairs")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    args = ap.parse_args()
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("numpy is not installed: nothing to compare with (pip install numpy)",
              file=sys.stderr)
        return 2
    from manybench.kernels.dgemm import numpy_blas
    bundled = numpy_blas()
    configs = {"default": ""} | ({"same": bundled[0]} if bundled else {})
    threads = sorted({int(t) for t in args.threads.split(",")})
    print(f"n = {args.n}, ~{args.seconds:g} s of calls per run, {args.repeat} pairs (+ "
          f"{args.warmup} warm-up), threads {threads}; numpy {numpy.__version__}", flush=True)
    ok = True
    for t in threads:
        libs: dict[str, str] = {}

        def numpy_side() -> float:
            return measure(NUMPY, t, str(args.n), str(args.seconds))["gflops"]

        def ours_side(config: str):
            def run() -> float:
                r = measure(OURS, t, str(args.n), str(args.seconds), str(t), configs[config])
                libs[config] = r["blas"]
                return r["gflops"]
            return run
        print(f"threads {t}: cpus {affinity(t)} for both", flush=True)
        runs = alternate({"numpy": numpy_side, **{c: ours_side(c) for c in configs}},
                         args.repeat, args.warmup,
                         harness.show_round(f"threads {t}", "GFLOP/s"))
        for c in configs:
            ok &= verdict(Goal(f"cpu.dgemm [{c}: {libs[c]}] threads {t} / numpy", GOAL),
                          runs[c], runs["numpy"], "GFLOP/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
