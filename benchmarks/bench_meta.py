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
phase.
Every run gets a fresh empty directory and a sync first; after an uncounted warm-up round,
rounds alternate which goes first. Gate: the median of the per-round ratios (manybench / C)
>= 0.95; best-of-N printed beside it. Exit status 1 when missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import harness
from harness import Goal, alternate, verdict

from manybench import _native
from manybench.kernels import KERNELS, SlotContext

GOAL = Goal("meta.mkdir / C loop", 0.95)
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
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/dir.mdtest.0.%ld", argv[1], i);
        if (mkdir(path, 0775) != 0) {
            perror(path);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    return 0;
}
"""


def build_peer(tmp: str) -> str:
    src, exe = os.path.join(tmp, "mkdir_loop.c"), os.path.join(tmp, "mkdir_loop")
    with open(src, "w") as f:
        f.write(PEER_C)
    harness.compile_c(src, exe)
    return exe


def ours(where: str, items: int) -> float:
    """mkdir/s of meta.mkdir in `where` (a fresh directory): `where`/mdtest_tree.0/..."""
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=where, shared=where)
    k = KERNELS["meta.mkdir"]
    state = k.prepare(ctx, {"items": items})
    r = k.run(state, _native.now_ns() + 1_000_000, 0)
    if r.status != "ok" or r.ops != items:
        sys.exit(f"meta.mkdir failed: {r.error}")
    return r.ops / (r.elapsed_ns / 1e9)


def peer(exe: str, where: str, items: int) -> float:
    """mkdir/s of the C loop in `where` (a fresh directory), in meta.mkdir's layout."""
    d = os.path.join(where, "mdtest_tree.0")
    os.makedirs(d, mode=0o775)
    out = subprocess.run([exe, d, str(items)], capture_output=True, text=True, check=True,
                         preexec_fn=harness.pinned(AFFINITY))
    return items / (int(out.stdout) / 1e9)


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
        def run() -> float:
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
                           args.repeat, args.warmup, harness.show_round("", "mkdir/s"))
    finally:
        shutil.rmtree(base, ignore_errors=True)   # our temp dir only, never DIR itself
    return 0 if verdict(GOAL, rounds["manybench"], rounds["C loop"], "mkdir/s") else 1


if __name__ == "__main__":
    sys.exit(main())
