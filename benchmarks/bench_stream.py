#!/usr/bin/env python3
"""mem.stream against McCalpin's STREAM compiled from C, measured in the same run.

    python benchmarks/bench_stream.py [--elements N] [--threads 1|all|N] [--ntimes 10]
                                      [--repeat 11]

Peer: upstream stream.c (McCalpin's, 5.10) from the STREAM_C variable (a path to stream.c,
e.g. from github.com/jeffhammond/STREAM), else benchmarks/peers/stream_ref.c (stream.c's
structure re-written: static arrays, NTIMES, best of times, MB = 10^6 bytes; the run says
which). Compiled into a temporary directory with the compiler and flags the package's
extension was built with (harness.compile_c: _native.build_info(), with the -march of the
clone of mem.stream's loops this cpu runs, x86-64-v4 on an AVX-512 machine) and -DSTREAM_ARRAY_SIZE=elements -DNTIMES=ntimes, run with
OMP_NUM_THREADS=threads. manybench: mem.stream with its default size (STREAM's rule against
this node's caches, as a plan without `elements` gets; --elements N gives both N instead) and
the same ntimes, one slot, through the kernel's own prepare/run; the peer is built with the
elements the kernel chose. Both pinned as slot 0 of a one-worker phase is (pin = "core" for
one thread, pin = "none", every cpu, for --threads all or N > 1).

After an uncounted warm-up round, rounds alternate which goes first. Work per element,
printed side by side: the elements, ntimes and bytes each kernel counts, and the compiled
loops (work.loops: the 512-bit moves and arithmetic and any streaming store in mem.stream's
loops_serial against STREAM's outlined OpenMP loops). Gate, the agreement rule: the same work
and the 95% interval of the median of the per-round Triad ratios (mem.stream / STREAM)
inside 0.95-1.05 (harness.agreement); best-of-N beside it; Copy, Scale and Add for information. Exit
status 1 when it fails.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness
from harness import agreement, alternate
import work

from manybench import _native
from manybench.kernels import KERNELS, SlotContext, stream

NAME = "mem.stream / STREAM Triad"
NAMES = ("copy", "scale", "add", "triad")
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "stream_ref.c")


def ours(elements: int | None, ntimes: int, threads: int) -> dict[str, float]:
    """MB/s of mem.stream's four kernels through its own prepare/run (one slot); elements None:
    the kernel's default."""
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch="/tmp", shared="/tmp")
    k = KERNELS["mem.stream"]
    state = k.prepare(ctx, {"elements": elements, "ntimes": ntimes, "threads": threads})
    try:
        r = k.run(state, _native.now_ns() + 1_000_000, 0)
    finally:
        k.cleanup(state)
    if r.status != "ok":
        sys.exit(f"mem.stream failed: {r.error}")
    return {n: r.metrics[f"{n}_mb_s"] for n in NAMES}


def peer(exe: str, affinity: tuple[int, ...], threads: int) -> dict[str, float]:
    """MB/s of STREAM's four kernels from its summary table."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([exe], capture_output=True, text=True, env=env,
                       preexec_fn=harness.pinned(affinity))
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
    ap.add_argument("--elements", type=int, default=None,
                    help="elements per array (default: mem.stream's default, STREAM's rule)")
    ap.add_argument("--threads", default="1", help="1, N or all (the cpus this process has)")
    ap.add_argument("--ntimes", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    threads = cpus if args.threads == "all" else int(args.threads)
    [affinity] = harness.slot_affinity(1, pin="core" if threads == 1 else "none")
    harness.pin_self(affinity)   # mem.stream runs in this process, as in a pinned slot
    elements, why = stream.elements_of({"elements": args.elements})
    print(f"mem.stream arrays: {stream.sizing(elements, why)['stream_sizing']}", flush=True)
    d = tempfile.mkdtemp(prefix="manybench-bench-stream-")
    try:
        exe = os.path.join(d, "stream_ref")
        src = os.environ.get("STREAM_C") or PEER
        print(f"peer: {src}" + ("" if os.environ.get("STREAM_C") else
                                " (STREAM_C not set: the repository's re-implementation of "
                                "stream.c, not McCalpin's file)"), flush=True)
        cmd = harness.compile_c(src, exe, f"-DSTREAM_ARRAY_SIZE={elements}",
                                f"-DNTIMES={args.ntimes}")
        print(f"peer built with: {' '.join(cmd[:-4])}", flush=True)
        print(f"1 slot, {threads} thread(s), {elements} elements per array "
              f"({3 * 8 * elements / 1e6:.0f} MB), ntimes {args.ntimes}, cpus {affinity}",
              flush=True)
        ours_loops = work.loops(_native.__file__, ("loops_serial",) if threads == 1 else
                                ("loops_omp._omp_fn",), harness.running_clone())
        peer_loops = work.loops(exe, ("main._omp_fn",))
        print(f"work per element: both {elements} elements x ntimes {args.ntimes}, "
              "Triad 24 bytes (STREAM's count); compiled loops:\n"
              f"  manybench: {work.loops_line(ours_loops)}\n"
              f"  STREAM:    {work.loops_line(peer_loops)}", flush=True)
        diffs = work.same_loops(ours_loops, peer_loops)
        runs = alternate({"manybench": lambda: ours(args.elements, args.ntimes, threads),
                          "STREAM": lambda: peer(exe, affinity, threads)},
                         args.repeat, args.warmup,
                         harness.show_round("Triad", "MB/s", key=lambda r: r["triad"]))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("best of each (MB/s):   manybench      STREAM   ratio   (for information)")
    for n in NAMES:
        m = max(r[n] for r in runs["manybench"])
        s = max(r[n] for r in runs["STREAM"])
        print(f"  {n.capitalize():<8}        {m:10.1f}  {s:10.1f}   {m / s:.3f}")
    return 0 if agreement(NAME, [r["triad"] for r in runs["manybench"]],
                          [r["triad"] for r in runs["STREAM"]], "MB/s", diffs,
                          "elements, ntimes, bytes per element, compiled loops") else 1


if __name__ == "__main__":
    sys.exit(main())
