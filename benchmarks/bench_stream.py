#!/usr/bin/env python3
"""mem.stream against McCalpin's STREAM compiled from C, measured in the same run.

    python benchmarks/bench_stream.py [--elements 20000000] [--ntimes 10] [--repeat 11] [--cpu N]

Peer: benchmarks/peers/stream_ref.c (stream.c v5.10's structure: static arrays, NTIMES,
best of times, MB = 10^6 bytes), compiled here into a temporary directory with the compiler
and flags the package's extension is built with (Python's CC, CFLAGS, CCSHARED plus
setup.py's -O3 -std=gnu11 -Wall -fopenmp) and -DSTREAM_ARRAY_SIZE=elements -DNTIMES=ntimes,
run with OMP_NUM_THREADS=1. manybench: mem.stream with the same elements and ntimes, one
slot, threads = 1, through the kernel's own prepare/run. Both run pinned to the same cpu.

After an uncounted warm-up pair, runs alternate which goes first. The figure is best-of-N:
mem.stream's highest Triad rate over STREAM's highest (outside load only ever subtracts);
the median of the per-pair ratios is printed beside it. Goal: best-of-N Triad ratio >= 0.95.
Copy, Scale and Add are printed for information. Exit status 1 when the goal is missed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from manybench import _native  # noqa: E402
from manybench.kernels import KERNELS, SlotContext  # noqa: E402

GOAL = 0.95
NAMES = ("copy", "scale", "add", "triad")
EXT_FLAGS = ["-O3", "-std=gnu11", "-Wall", "-fopenmp"]   # setup.py's extra_compile_args
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "stream_ref.c")


def compiler() -> list[str]:
    """The compiler command line the extension is built with (as distutils assembles it)."""
    v = sysconfig.get_config_var
    return [*(v("CC") or "cc").split(), *(v("CFLAGS") or "").split(),
            *(v("CCSHARED") or "").split(), *EXT_FLAGS]


def build_peer(d: str, elements: int, ntimes: int) -> tuple[str, list[str]]:
    exe = os.path.join(d, "stream_ref")
    cmd = [*compiler(), f"-DSTREAM_ARRAY_SIZE={elements}", f"-DNTIMES={ntimes}", "-o", exe,
           PEER]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"building the peer failed:\n{' '.join(cmd)}\n{p.stderr}")
    return exe, cmd


def ours(elements: int, ntimes: int) -> dict[str, float]:
    """MB/s of mem.stream's four kernels through its own prepare/run (one slot, 1 thread)."""
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch="/tmp", shared="/tmp")
    k = KERNELS["mem.stream"]
    state = k.prepare(ctx, {"elements": elements, "ntimes": ntimes, "threads": 1})
    try:
        r = k.run(state, _native.now_ns() + 1_000_000, 0)
    finally:
        k.cleanup(state)
    if r.status != "ok":
        sys.exit(f"mem.stream failed: {r.error}")
    return {n: r.metrics[f"{n}_mb_s"] for n in NAMES}


def peer(exe: str, cpu: int) -> dict[str, float]:
    """MB/s of STREAM's four kernels from its summary table."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run([exe], capture_output=True, text=True, env=env,
                       preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    if p.returncode != 0 or "Solution Validates" not in p.stdout:
        sys.exit(f"STREAM peer failed (exit {p.returncode}):\n{p.stdout}{p.stderr}")
    out = {}
    for n in NAMES:
        m = re.search(rf"^{n.capitalize()}:\s+([\d.]+)", p.stdout, re.MULTILINE)
        if not m:
            sys.exit(f"no {n.capitalize()} line in STREAM's output:\n{p.stdout}")
        out[n] = float(m.group(1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=int, default=20_000_000)
    ap.add_argument("--ntimes", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    ap.add_argument("--cpu", type=int, default=None,
                    help="cpu both run on (default: the last one this process may use)")
    args = ap.parse_args()
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})   # mem.stream runs in this process, as in a pinned slot
    d = tempfile.mkdtemp(prefix="manybench-bench-stream-")
    try:
        exe, cmd = build_peer(d, args.elements, args.ntimes)
        print(f"peer built with: {' '.join(cmd[:-3])} ...", flush=True)
        print(f"1 slot, 1 thread, {args.elements} elements per array "
              f"({3 * 8 * args.elements / 1e6:.0f} MB), ntimes {args.ntimes}, cpu {cpu}",
              flush=True)
        runs: dict[str, list[dict[str, float]]] = {"manybench": [], "stream": []}
        ratios = []
        for rep in range(-args.warmup, args.repeat):
            order = [("manybench", lambda: ours(args.elements, args.ntimes)),
                     ("stream", lambda: peer(exe, cpu))]
            if rep % 2:
                order.reverse()
            got = {who: fn() for who, fn in order}
            if rep < 0:
                print(f"  warm-up: Triad manybench {got['manybench']['triad']:.1f} MB/s, "
                      f"STREAM {got['stream']['triad']:.1f} MB/s (not counted)", flush=True)
                continue
            for who in got:
                runs[who].append(got[who])
            ratios.append(got["manybench"]["triad"] / got["stream"]["triad"])
            print(f"  rep {rep + 1}: Triad manybench {got['manybench']['triad']:10.1f} MB/s   "
                  f"STREAM {got['stream']['triad']:10.1f} MB/s   ratio {ratios[-1]:.3f}",
                  flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("best of each (MB/s):   manybench      STREAM   ratio")
    best = {}
    for n in NAMES:
        m = max(r[n] for r in runs["manybench"])
        s = max(r[n] for r in runs["stream"])
        best[n] = m / s
        print(f"  {n.capitalize():<8}        {m:10.1f}  {s:10.1f}   {best[n]:.3f}")
    passed = best["triad"] >= GOAL
    print(f"mem.stream / STREAM Triad = {best['triad']:.3f} best-of-{args.repeat} "
          f"(goal >= {GOAL}) {'PASS' if passed else 'FAIL'}; median of pair ratios "
          f"{statistics.median(ratios):.3f}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
