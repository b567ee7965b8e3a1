#!/usr/bin/env python3
"""cpu.himeno against himenoBMTxp compiled from C, measured in the same run.

    python benchmarks/bench_himeno.py [--grid S] [--seconds 3] [--repeat 11] [--cpu N]

Peer: benchmarks/peers/himeno_ref.c (himenoBMTxp.c's static arrays, initmt, jacobi, fflop
and mflops), compiled here into a temporary directory with the compiler and flags the
package's extension is built with (Python's CC, CFLAGS, CCSHARED plus setup.py's -O3
-std=gnu11 -Wall -fopenmp) and the grid's size macro. A warm-up run of the peer calibrates
the iteration count as himenoBMTxp does (for `seconds` instead of 60 s); every counted run
of both then does that same count: cpu.himeno with iterations fixed, one slot, threads = 1,
through the kernel's own prepare/run; both pinned to the same cpu. Before timing, the
rehearsal residual (gosa after 3 iterations from initmt) of both must agree, as a check that
both compute the same thing.

Runs alternate which goes first. The figure is best-of-N: cpu.himeno's highest MFLOPS over
himenoBMTxp's highest (outside load only ever subtracts); the median of the per-pair ratios
is printed beside it. Goal: best-of-N ratio >= 0.95. Exit status 1 when the goal is missed.
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
from manybench.kernels.himeno import GRIDS  # noqa: E402

GOAL = 0.95
EXT_FLAGS = ["-O3", "-std=gnu11", "-Wall", "-fopenmp"]   # setup.py's extra_compile_args
MACRO = {"XS": "XSMALL", "S": "SMALL", "M": "MIDDLE", "L": "LARGE", "XL": "ELARGE"}
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "himeno_ref.c")


def compiler() -> list[str]:
    """The compiler command line the extension is built with (as distutils assembles it)."""
    v = sysconfig.get_config_var
    return [*(v("CC") or "cc").split(), *(v("CFLAGS") or "").split(),
            *(v("CCSHARED") or "").split(), *EXT_FLAGS]


def build_peer(d: str, grid: str) -> tuple[str, list[str]]:
    exe = os.path.join(d, "himeno_ref")
    cmd = [*compiler(), f"-D{MACRO[grid]}", "-o", exe, PEER]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"building the peer failed:\n{' '.join(cmd)}\n{p.stderr}")
    return exe, cmd


def peer(exe: str, cpu: int, seconds: float, nn: int | None = None) -> dict:
    """himenoBMTxp's figures: rehearsal gosa, iterations, measured MFLOPS."""
    argv = [exe, str(seconds)] + ([str(nn)] if nn else [])
    p = subprocess.run(argv, capture_output=True, text=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    out = p.stdout
    m_reh = re.search(r"MFLOPS: \S+ time\(s\): \S+ (\S+)", out)
    m_nn = re.search(r"Loop executed for (\d+) times", out)
    m_mf = re.search(r"MFLOPS measured : ([\d.]+)", out)
    if p.returncode != 0 or not (m_reh and m_nn and m_mf):
        sys.exit(f"himeno peer failed (exit {p.returncode}):\n{out}{p.stderr}")
    return {"gosa3": m_reh.group(1), "nn": int(m_nn.group(1)), "mflops": float(m_mf.group(1))}


def ours(grid: str, nn: int) -> float:
    """MFLOPS of cpu.himeno through its own prepare/run (one slot, 1 thread)."""
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch="/tmp", shared="/tmp")
    k = KERNELS["cpu.himeno"]
    state = k.prepare(ctx, {"grid": grid, "iterations": nn, "threads": 1})
    try:
        r = k.run(state, _native.now_ns() + 1_000_000, 0)
    finally:
        k.cleanup(state)
    if r.status != "ok":
        sys.exit(f"cpu.himeno failed: {r.error}")
    return r.metrics["mflops"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", default="S", choices=sorted(MACRO))
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="calibration target of the warm-up run (himenoBMTxp: 60)")
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--cpu", type=int, default=None,
                    help="cpu both run on (default: the last one this process may use)")
    args = ap.parse_args()
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})   # cpu.himeno runs in this process, as in a pinned slot
    d = tempfile.mkdtemp(prefix="manybench-bench-himeno-")
    try:
        exe, cmd = build_peer(d, args.grid)
        print(f"peer built with: {' '.join(cmd[:-3])} ...", flush=True)
        warm = peer(exe, cpu, args.seconds)
        nn = warm["nn"]
        # the same computation: gosa after himeno's 3-iteration rehearsal from initmt
        h = _native.himeno_new(*GRIDS[args.grid], 1)
        _, gosa3 = _native.himeno_rehearse(h, 3)
        _native.himeno_release(h)
        same = f"{gosa3:e}" == warm["gosa3"]
        print(f"grid {args.grid} {'x'.join(map(str, GRIDS[args.grid]))}, 1 slot, 1 thread, "
              f"cpu {cpu}; rehearsal gosa: cpu.himeno {gosa3:e}, himenoBMTxp {warm['gosa3']} "
              f"({'same' if same else 'DIFFERENT'})", flush=True)
        if not same:
            print("the kernels do not compute the same thing: no comparison", file=sys.stderr)
            return 1
        print(f"  warm-up: himenoBMTxp {warm['mflops']:.1f} MFLOPS, calibrated to {nn} "
              f"iterations for {args.seconds:g}s (used by both from here on)", flush=True)
        runs: dict[str, list[float]] = {"manybench": [], "himeno": []}
        ratios = []
        for rep in range(args.repeat):
            order = [("manybench", lambda: ours(args.grid, nn)),
                     ("himeno", lambda: peer(exe, cpu, args.seconds, nn)["mflops"])]
            if rep % 2:
                order.reverse()
            got = {who: fn() for who, fn in order}
            for who in got:
                runs[who].append(got[who])
            ratios.append(got["manybench"] / got["himeno"])
            print(f"  rep {rep + 1}: cpu.himeno {got['manybench']:9.1f} MFLOPS   "
                  f"himenoBMTxp {got['himeno']:9.1f} MFLOPS   ratio {ratios[-1]:.3f}",
                  flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    best = max(runs["manybench"]) / max(runs["himeno"])
    passed = best >= GOAL
    print(f"cpu.himeno / himenoBMTxp MFLOPS = {best:.3f} best-of-{args.repeat} "
          f"(best {max(runs['manybench']):.1f} vs {max(runs['himeno']):.1f}; goal >= {GOAL}) "
          f"{'PASS' if passed else 'FAIL'}; median of pair ratios "
          f"{statistics.median(ratios):.3f}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
