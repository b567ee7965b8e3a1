#!/usr/bin/env python3
"""meta.mkdir against a plain C mkdir loop compiled in the same run.

    python benchmarks/bench_meta.py [DIR] [--items 20000] [--repeat 5] [--warmup 1]

One slot makes `items` directories in an empty directory (SMTEF's 20,000), in mdtest's layout
as meta.mkdir does: DIR/mdtest_tree.0/dir.mdtest.0.<i>, mode 0775, each by its full path.
The peer is the obvious C program doing exactly that: snprintf the path, mkdir(path, 0775),
in a loop timed with CLOCK_MONOTONIC, built into a temp dir now with the package's compiler
and flags (harness.compile_c); its tree directory is made before the loop, as meta.mkdir's
prepare makes it before T0. meta.mkdir runs through its Python prepare/run (t0 = now + 1 ms)
and is timed by the kernel itself (first op to last); both pinned as slot 0 of a one-worker
phase. Each side also counts the CPU time of its loop (the thread's, CLOCK_THREAD_CPUTIME_ID:
manybench's around its run, the wait for T0 asleep; the C loop's around the loop), user and
system: what the calls cost, where a busy machine's preemption moves the wall clock 2-5x.
Every run gets a fresh empty directory and a sync first; after an uncounted warm-up round,
rounds alternate which goes first. Gate: the median of the per-round CPU time ratios
(C / manybench, per item) >= 0.95; the wall-clock rate ratio (manybench / C) and best-of-N
printed beside it, for information. Exit status 1 when missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import harness
from harness import Goal, alternate, info, verdict

from manybench import _native
from manybench.kernels import KERNELS, SlotContext

GOAL = Goal("meta.mkdir / C loop, CPU time per item (C / manybench)", 0.95)
[AFFINITY] = harness.slot_affinity(1)

PEER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long n = atol(argv[2]);
    char path[4096];
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/dir.mdtest.0.%ld", argv[1], i);
        if (mkdir(path, 0775) != 0) {
            perror(path);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    printf("%lld %lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec),
           (long long)(cb.tv_sec - ca.tv_sec) * 1000000000LL + (cb.tv_nsec - ca.tv_nsec));
    return 0;
}
"""


def build_peer(tmp: str) -> str:
    src, exe = os.path.join(tmp, "mkdir_loop.c"), os.path.join(tmp, "mkdir_loop")
    with open(src, "w") as f:
        f.write(PEER_C)
    harness.compile_c(src, exe)
    return exe


def ours(where: str, items: int) -> tuple[float, float]:
    """mkdir/s of meta.mkdir in `where` (a fresh directory): `where`/mdtest_tree.0/..., and
    the CPU ns per item of its run."""
    # `where` is the run's root, so the tree is where/mdtest_tree.0, as the C loop's
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=os.path.join(where, "0"), shared=os.path.join(where, "shared"))
    k = KERNELS["meta.mkdir"]
    state = k.prepare(ctx, {"items": items})
    cpu = time.thread_time_ns()
    r = k.run(state, _native.now_ns() + 1_000_000, 0)
    cpu = time.thread_time_ns() - cpu
    if r.status != "ok" or r.ops != items:
        sys.exit(f"meta.mkdir failed: {r.error}")
    return r.ops / (r.elapsed_ns / 1e9), cpu / items


def peer(exe: str, where: str, items: int) -> tuple[float, float]:
    """mkdir/s and CPU ns per item of the C loop in `where` (a fresh directory), in
    meta.mkdir's layout."""
    d = os.path.join(where, "mdtest_tree.0")
    os.makedirs(d, mode=0o775)
    out = subprocess.run([exe, d, str(items)], capture_output=True, text=True, check=True,
                         preexec_fn=harness.pinned(AFFINITY))
    wall, cpu = map(int, out.stdout.split())
    return items / (wall / 1e9), cpu / items


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", help="directory to work in (default: a temp dir under "
                                           "/var/tmp, removed afterwards)")
    ap.add_argument("--items", default=20000, type=int)
    ap.add_argument("--repeat", default=5, type=int)
    ap.add_argument("--warmup", default=1, type=int, help="uncounted rounds first")
    args = ap.parse_args()
    missing = harness.compiler_missing()
    if missing:
        print(f"{missing}: cannot build the C peer", file=sys.stderr)
        return 2
    harness.pin_self(AFFINITY)   # meta.mkdir runs in this process, as in a pinned slot
    base = tempfile.mkdtemp(prefix="manybench-bench-meta-", dir=args.dir or "/var/tmp")
    print(f"1 slot, {args.items} mkdir in a fresh directory under {base}", flush=True)
    count = iter(range(1 << 30))

    def side(fn):
        def run() -> tuple[float, float]:
            where = os.path.join(base, f"run-{next(count)}")
            os.sync()   # nobody pays for the previous run's (or clean-up's) writeback
            rate = fn(where, args.items)
            shutil.rmtree(where)
            return rate
        return run
    try:
        exe = build_peer(base)
        rounds = alternate({"manybench": side(ours),
                            "C loop": side(lambda w, n: peer(exe, w, n))},
                           args.repeat, args.warmup, show)
    finally:
        shutil.rmtree(base, ignore_errors=True)   # our temp dir only, never DIR itself
    mb, c = rounds["manybench"], rounds["C loop"]
    info("meta.mkdir / C loop, wall-clock mkdir/s", [r[0] for r in mb], [r[0] for r in c],
         "mkdir/s")
    # a cost: the ratio C / manybench of CPU per item is manybench's speed relative to C
    return 0 if verdict(GOAL, [1 / r[1] for r in mb], [1 / r[1] for r in c],
                        "items per CPU ns") else 1


def show(rnd: int, got: dict) -> None:
    print(f"  {'warm-up (not counted)' if rnd < 0 else f'round {rnd + 1}'}: " + "   ".join(
        f"{n} {rate:,.1f} mkdir/s, {cpu / 1e3:.2f} us CPU per item"
        for n, (rate, cpu) in got.items()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
