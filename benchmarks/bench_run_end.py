#!/usr/bin/env python3
"""The end of a large run: what the coordinator holds and spends after its last phase (the
run's quality checks over every record, run/quality.py), against the tree before.

  python benchmarks/bench_run_end.py                         # 1,000 x 64, 10 and 20 phases
  python benchmarks/bench_run_end.py --nodes 300 --phases 20 --rounds 3

Each run is one `manybench run plan.toml -q --simulate NxS` of null phases with every slot a
worker, `--phases` N and then 2N of them, left to finish (bench_sim.py stops its runs before this point). The
coordinator's RSS is sampled every 20 ms (psutil: /proc): the largest while phases were
still being stored (the phase loop) and the largest after the last one was (the end); and
the end's duration: the last phase stored -> the process gone.

Peer: the same runs by the tree before the change (`--before REF`, default main when it
began), alternated pair by pair. Goal: the end does not grow with the run, it holds a
phase's records at a time: its peak RSS at 2N phases <= 1.1 x at N (before: every record at
once, ~2.4 kB each: 1.5 GB at 640,000). Its peak and time at 2N are printed against the
peer's, for information.
Exit status 1 when the goal is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

from harness import (StoredPhases, absolute, alternate, info, machine, show_round,
                     write_null_plan)
from peer_tree import ROOT, before_tree, drop_tree, env_of

BEFORE = "ef0a12b"     # main before the run's end read a phase at a time
GOAL = 1.1             # the end's peak RSS at 2N phases against at N


def one_run(tree: str, nodes: int, slots: int, phases: int) -> dict:
    d = tempfile.mkdtemp(prefix="mb-end-")
    try:
        plan = write_null_plan(d, nodes * slots, phases)
        err = open(os.path.join(d, "stderr.txt"), "w")   # a pipe read at the end would fill
        run = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q",
                                "--simulate", f"{nodes}x{slots}"], env=env_of(tree),
                               stdout=subprocess.DEVNULL, stderr=err)
        proc, stored = psutil.Process(run.pid), StoredPhases(os.path.join(d, "results.db"))
        loop = end = 0
        last_at = None
        while run.poll() is None:
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                break
            if last_at is None:
                loop = max(loop, rss)
                if stored.count() >= phases:
                    last_at = time.monotonic()
            else:
                end = max(end, rss)
            time.sleep(0.02)
        run.wait()
        err.close()
        stored.close()
        if run.returncode != 0 or last_at is None:
            with open(os.path.join(d, "stderr.txt")) as f:
                raise RuntimeError(f"the run failed (exit {run.returncode}):\n{f.read()[-2000:]}")
        return {"loop_mb": loop / 2**20, "end_mb": end / 2**20,
                "end_s": time.monotonic() - last_at}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def both(tree: str, nodes: int, slots: int, phases: int) -> dict:
    """The run at `phases` and at twice as many: does the end grow with the run?"""
    one, two = (one_run(tree, nodes, slots, n) for n in (phases, 2 * phases))
    return {"one": one, "two": two, "growth": two["end_mb"] / one["end_mb"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--phases", type=int, default=10, help="N: runs of N and 2N phases")
    ap.add_argument("--rounds", type=int, default=1, help="counted pairs")
    ap.add_argument("--before", default=BEFORE, help="git ref of the peer tree ('' = none)")
    a = ap.parse_args()
    print(machine(), flush=True)
    n = a.nodes * a.slots
    print(f"the run's end: {a.nodes} simulated nodes x {a.slots} slots, {a.phases} and "
          f"{2 * a.phases} null phases ({n * a.phases:,} and {2 * n * a.phases:,} records)",
          flush=True)
    trees = {"this tree": ROOT}
    made = before_tree(a.before) if a.before else None
    if made:
        trees["before"] = made
    try:
        runs = alternate({name: (lambda t=t: both(t, a.nodes, a.slots, a.phases))
                          for name, t in trees.items()}, a.rounds, 0,
                         show_round("end peak RSS 2N / N", "x", key=lambda g: g["growth"]))
    finally:
        if made:
            drop_tree(made)
    for name, gs in runs.items():
        for g in gs:
            print(f"  {name}: " + "; ".join(
                f"{k} phases: loop peak {g[part]['loop_mb']:.0f} MB, end peak "
                f"{g[part]['end_mb']:.0f} MB, end {g[part]['end_s']:.1f} s"
                for k, part in ((a.phases, "one"), (2 * a.phases, "two"))), flush=True)
    ours = runs["this tree"]
    if "before" in runs:
        for what, unit, key in (("peak RSS", "MB", "end_mb"), ("duration", "s", "end_s")):
            info(f"the end's {what} at {2 * a.phases} phases, this tree / before",
                 [g["two"][key] for g in ours], [g["two"][key] for g in runs["before"]],
                 unit, "lower")
    growth = statistics.median(g["growth"] for g in ours)
    before = (f"before {statistics.median(g['growth'] for g in runs['before']):.2f} x"
              if "before" in runs else "")
    return 0 if absolute(f"the end's peak RSS at {2 * a.phases} phases / at {a.phases} "
                         "(median)", growth, GOAL, "x", beside=before) else 1


if __name__ == "__main__":
    sys.exit(main())
