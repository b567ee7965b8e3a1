#!/usr/bin/env python3
"""cpu.dgemm's `blas = "best"` against every library x core type on this node.

    python benchmarks/bench_blas_best.py [--n 1024] [--threads 1] [--seconds 1] [--repeat 5]
                                         [--warmup 1]

The combinations: every CBLAS cpu.dgemm finds (the system's sonames, numpy's bundled
OpenBLAS), as it loads on its own and under each core type the cpu's flags allow
(OPENBLAS_CORETYPE; BLIS_ARCH_TYPE and MKL_ENABLE_INSTRUCTIONS where installed), found as
`blas = "best"` finds them and kept once per (file, core the library says it runs). Each is
measured through cpu.dgemm's own prepare/run in a fresh process started with its variable
(`blas` = its file), pinned as the slot; `blas = "best"` likewise in a fresh process, its
trials before T0 and outside the window. Rounds alternate the order of all sides, the first
round a warm-up that is not counted.

Figures: GFLOP/s over each run's CPU time per thread (process time, all its threads: on a
shared machine the time a side is not running is not its library's), the wall-clock GFLOP/s
(cpu.dgemm's own figure) beside it for information. Gate: the fastest combination is the
one with the highest median CPU-time GFLOP/s over the rounds; the median of the per-round
ratios best / that combination >= 0.95, on CPU time; the same ratio on the wall clock is
printed, not gated. Every combination's medians and best's choice per round are printed. Exit status 1 when the goal is missed, 2
when no CBLAS is found.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import harness
from bench_dgemm import OURS, affinity, measure
from harness import ENV, Goal, alternate, verdict

GOAL = 0.95


def combinations(threads: int) -> list[tuple[str, tuple, str]]:
    """(file, env, core) of every library x core type "best" would try, once per
    (file, core): found with short trials (n = 64, 1 ms)."""
    from manybench.kernels import blas, blas_trial
    tried = blas_trial.trials(
        blas.candidates(None), blas._flags(None),
        lambda v: blas_trial.run_trial(v, threads, 64, 1, 1.0, 0.0, 1_000_000,
                                       blas.THREAD_ENV))
    out: dict[tuple[str, str], tuple[str, tuple, str]] = {}
    for t in tried:
        if not t.error and t.round == 1:
            out.setdefault((t.file, t.core), (t.file, t.variant.env, t.core))
    return list(out.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5, help="counted rounds")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    args = ap.parse_args()
    from manybench.kernels.blas_trial import KNOBS
    t = args.threads
    combos = combinations(t)
    if not combos:
        print("no CBLAS found: nothing to compare", file=sys.stderr)
        return 2
    base = {k: v for k, v in ENV.items() if k not in KNOBS}
    print(f"n = {args.n}, ~{args.seconds:g} s of calls per run, {args.repeat} rounds (+ "
          f"{args.warmup} warm-up), threads {t} on cpus {affinity(t)}; {len(combos)} "
          f"combinations; environment: " + (" ".join(f"{k}={os.environ[k]}" for k in KNOBS
                                                    if k in os.environ) or "no core set"),
          flush=True)
    names = {f"{os.path.basename(f)}:{core}": (f, env) for f, env, core in combos}
    chosen: list[str] = []

    def combo(name: str):
        f, env = names[name]
        return lambda: measure(OURS, t, str(args.n), str(args.seconds), str(t), f,
                               env={**base, **dict(env)})

    def best() -> dict:
        r = measure(OURS, t, str(args.n), str(args.seconds), str(t), "best")
        chosen.append(f"{os.path.basename(r['blas'])}:{r['core']}")
        return r

    runs = alternate({"best": best, **{n: combo(n) for n in names}}, args.repeat,
                     args.warmup, harness.show_round(f"threads {t}", "GFLOP/s (CPU time)",
                                                     key=lambda r: r["cpu_gflops"]))
    cpu = {n: [r["cpu_gflops"] for r in rs] for n, rs in runs.items()}
    wall = {n: [r["gflops"] for r in rs] for n, rs in runs.items()}
    medians = {n: statistics.median(cpu[n]) for n in names}
    for n, m in sorted(medians.items(), key=lambda kv: -kv[1]):
        print(f"  {n}: median {m:.1f} GFLOP/s over CPU time, {statistics.median(wall[n]):.1f} "
              f"over the wall clock ({' '.join(f'{v:.1f}' for v in cpu[n])})")
    top = max(medians, key=medians.get)
    print(f"best chose, per round (warm-up first): {', '.join(chosen)}")
    name = f"cpu.dgemm blas = \"best\" / fastest combination [{top}], threads {t}"
    ok = verdict(Goal(name + ", CPU time", GOAL), cpu["best"], cpu[top], "GFLOP/s")
    harness.info(name + ", wall clock", wall["best"], wall[top], "GFLOP/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
