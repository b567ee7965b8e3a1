#!/usr/bin/env python3
"""What the coordinator's garbage-collector pause buys (gc_pause.py, `run.gc_pause`): the
coordinator's record path (records_path.py: replies off the wire -> records -> stall check ->
one transaction, the collector around each phase as the phase loop has it) run with the pause
on and off (MANYBENCH_RUN__GC_PAUSE), pairs alternated, in a fresh process each.

  python benchmarks/bench_gc_pause.py                  # 64 x 64, 1,000 x 64, 1 x 2; 5 pairs
  python benchmarks/bench_gc_pause.py --sizes 64x64:30 --rounds 9

Per size: CPU time of the process per phase (getrusage, user + system: not wall time, so the
machine's other work moves it less), pause on / pause off as the median of the paired ratios
with its interval, and the cyclic collections that ran over the measured phases. For
information: no goal (the pause's figure is stated in gc_pause.py's docstring).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import harness
from harness import alternate, info

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = "64x64:30,1000x64:3,1x2:3000"     # nodes x slots : measured phases


def run(nodes: int, slots: int, phases: int, pause: bool) -> dict:
    env = {**harness.ENV, "MANYBENCH_RUN__GC_PAUSE": "true" if pause else "false"}
    out = subprocess.run([sys.executable, os.path.join(HERE, "records_path.py"), str(nodes),
                          str(slots), str(phases)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=SIZES, help="NODESxSLOTS:PHASES, comma-separated")
    ap.add_argument("--rounds", type=int, default=5, help="counted pairs")
    a = ap.parse_args()
    print(f"machine: {harness.machine()}; load {os.getloadavg()[0]:.1f} at the start",
          flush=True)
    for size in a.sizes.split(","):
        shape, phases = size.split(":")
        nodes, slots = (int(x) for x in shape.split("x"))
        runs = alternate({name: (lambda p=pause: run(nodes, slots, int(phases), p))
                          for name, pause in (("on", True), ("off", False))}, a.rounds, 1,
                         harness.show_round(shape, "ms/phase", lambda r: r["ms_per_phase"]))
        on = [r["ms_per_phase"] for r in runs["on"]]
        off = [r["ms_per_phase"] for r in runs["off"]]
        info(f"record path {shape}: CPU per phase, pause on / off", on, off, "ms", "lower")
        print(f"  {shape}: collections over {phases} phases, median: on "
              f"{statistics.median(r['collections'] for r in runs['on']):g}, off "
              f"{statistics.median(r['collections'] for r in runs['off']):g}; "
              f"{statistics.median(on) / (nodes * slots) * 1e3:.2f} us per record with the "
              f"pause, {statistics.median(off) / (nodes * slots) * 1e3:.2f} without; load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
