#!/usr/bin/env python3
"""cpu.himeno against himenoBMTxp compiled from C, measured in the same run.

    python benchmarks/bench_himeno.py [--grid S] [--seconds 3] [--repeat 11] [--warmup 1]

Peer: benchmarks/peers/himeno_ref.c (himenoBMTxp.c's static arrays, initmt, jacobi, fflop
and mflops), compiled into a temporary directory with the compiler and flags the package's
extension was built with (harness.compile_c: _native.build_info(), with the -march of the
clone of cpu.himeno's Jacobi this cpu runs) and the grid's size macro.
A first run of the peer calibrates the iteration count as himenoBMTxp does (for `seconds`
instead of 60 s); every run of both then does that same count: cpu.himeno with
iterations fixed, one slot, threads = 1, through the kernel's own prepare/run; both pinned as
slot 0 of a one-worker phase is. Before timing, the rehearsal residual (gosa after 3
iterations from initmt) of both must agree, as a check that both compute the same thing;
every round's printed Gosa (after the rehearsal's 3 and the measured iterations, both sides
keeping the rehearsal) must agree too.

Then rounds of one run each, the first an uncounted warm-up, alternating which goes first.
Work per iteration, printed side by side: iterations, grid, rehearsal gosa and the compiled
loops (work.loops: the 512-bit arithmetic of each side's jacobi). Gate, the agreement rule:
the same work and the 95% interval of the median of the per-round MFLOPS ratios (cpu.himeno /
himenoBMTxp) inside 0.95-1.05 (harness.agreement); best-of-N beside it. Exit status 1 when it fails.
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
from manybench.kernels import KERNELS, SlotContext
from manybench.kernels.himeno import GRIDS

NAME = "cpu.himeno / himenoBMTxp MFLOPS"
MACRO = {"XS": "XSMALL", "S": "SMALL", "M": "MIDDLE", "L": "LARGE", "XL": "ELARGE"}
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "himeno_ref.c")


def peer(exe: str, affinity: tuple[int, ...], seconds: float, nn: int | None = None) -> dict:
    """himenoBMTxp's figures: rehearsal gosa, iterations, measured MFLOPS."""
    argv = [exe, str(seconds)] + ([str(nn)] if nn else [])
    p = subprocess.run(argv, capture_output=True, text=True,
                       preexec_fn=harness.pinned(affinity))
    out = p.stdout
    m_reh = re.search(r"MFLOPS: \S+ time\(s\): \S+ (\S+)", out)
    m_nn = re.search(r"Loop executed for (\d+) times", out)
    m_mf = re.search(r"MFLOPS measured : ([\d.]+)", out)
    m_gosa = re.search(r"Gosa : (\S+)", out)
    if p.returncode != 0 or not (m_reh and m_nn and m_mf and m_gosa):
        sys.exit(f"himeno peer failed (exit {p.returncode}):\n{out}{p.stderr}")
    return {"gosa3": m_reh.group(1), "nn": int(m_nn.group(1)), "mflops": float(m_mf.group(1)),
            "gosa": m_gosa.group(1)}


def ours(grid: str, nn: int) -> dict:
    """MFLOPS and gosa of cpu.himeno through its own prepare/run (one slot, 1 thread)."""
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
    return {"mflops": r.metrics["mflops"], "gosa": f"{r.metrics['gosa']:e}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", default="S", choices=sorted(MACRO))
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="calibration target of the first peer run (himenoBMTxp: 60)")
    ap.add_argument("--repeat", type=int, default=11, help="counted pairs")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    args = ap.parse_args()
    [affinity] = harness.slot_affinity(1)
    harness.pin_self(affinity)   # cpu.himeno runs in this process, as in a pinned slot
    d = tempfile.mkdtemp(prefix="manybench-bench-himeno-")
    try:
        exe = os.path.join(d, "himeno_ref")
        cmd = harness.compile_c(PEER, exe, f"-D{MACRO[args.grid]}")
        print(f"peer built with: {' '.join(cmd[:-4])}", flush=True)
        warm = peer(exe, affinity, args.seconds)
        nn = warm["nn"]
        # the same computation: gosa after himeno's 3-iteration rehearsal from initmt
        h = _native.himeno_new(*GRIDS[args.grid], 1)
        _, gosa3 = _native.himeno_rehearse(h, 3)
        _native.himeno_release(h)
        same = f"{gosa3:e}" == warm["gosa3"]
        print(f"grid {args.grid} {'x'.join(map(str, GRIDS[args.grid]))}, 1 slot, 1 thread, "
              f"cpus {affinity}; rehearsal gosa: cpu.himeno {gosa3:e}, himenoBMTxp "
              f"{warm['gosa3']} ({'same' if same else 'DIFFERENT'})", flush=True)
        if not same:
            print("the kernels do not compute the same thing: no comparison", file=sys.stderr)
            return 1
        print(f"  calibration: himenoBMTxp {warm['mflops']:.1f} MFLOPS, {nn} iterations for "
              f"{args.seconds:g}s (used by both from here on)", flush=True)
        ours_loops = work.loops(_native.__file__, ("jacobi",), harness.running_clone())
        peer_loops = work.loops(exe, ("jacobi",))
        print(f"work per iteration: both {nn} iterations of the same grid, 34 flops per "
              "point (himeno's count), the same rehearsal gosa; compiled loops:\n"
              f"  cpu.himeno:  {work.loops_line(ours_loops)}\n"
              f"  himenoBMTxp: {work.loops_line(peer_loops)}", flush=True)
        diffs = work.same_loops(ours_loops, peer_loops)
        rounds = alternate({"cpu.himeno": lambda: ours(args.grid, nn),
                            "himenoBMTxp": lambda: peer(exe, affinity, args.seconds, nn)},
                           args.repeat, args.warmup,
                           harness.show_round("", "MFLOPS", key=lambda r: r["mflops"]))
        # the printed residual: after the rehearsal's 3 and the nn measured, on both sides
        gosas = {side: {r["gosa"] for r in rs} for side, rs in rounds.items()}
        print(f"Gosa after 3 + {nn} iterations: cpu.himeno {sorted(gosas['cpu.himeno'])}, "
              f"himenoBMTxp {sorted(gosas['himenoBMTxp'])}", flush=True)
        if gosas["cpu.himeno"] != gosas["himenoBMTxp"]:
            diffs.append("Gosa")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0 if agreement(NAME, [r["mflops"] for r in rounds["cpu.himeno"]],
                          [r["mflops"] for r in rounds["himenoBMTxp"]], "MFLOPS", diffs,
                          "iterations, grid, flops per point, rehearsal gosa, printed Gosa, "
                          "compiled loops") else 1


if __name__ == "__main__":
    sys.exit(main())
