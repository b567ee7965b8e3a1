#!/usr/bin/env python3
"""A rank's recorded start against its program's own: how long after the recorded start each
rank's program sees MPI_Init return, and the program's own start spread across the job's
ranks against the skew the records report (issue 31, item 1), Open MPI and MPICH.

    python benchmarks/bench_mpi_start.py [--rounds 5] [--warmup 1] [--phases 20]
                                         [--before int31] [--family openmpi|mpich]

Each round: one run of `phases` phases of a 2-rank job (workers = 2, a cpu each) of the
tests' probe (tests/fixtures/mpi/probe.c, built with the family's mpicc), which reads
CLOCK_REALTIME right after MPI_Init returns and prints it (init_ns). The local engine's node
clock is the coordinator's, so a record's start_ns and the probe's init_ns are one clock.
  distance   init_ns - start_ns of each rank (ns): what passes between the recorded start
             and the program's first instant; median (and p90) over every rank of every phase
  spread     max - min of a job's init_ns: the program's own start skew
  skew       max - min of a job's start_ns (the record's job_skew_s)
  excess     spread - skew per phase: how much the reported skew understates the program's
Gates (this tree, each family; the issue's "Done means", on a quiet 2-cpu machine): median
distance <= 3 us; median excess <= 5 us. The tree before (`--before REF`, default int31:
the rank wrote `start ...` to its slot, pinned to the same cpu, before returning) runs the
same rounds, pairs alternated, its figures beside. The load average is printed with every
round: wall-clock figures move with it (the issue measured 9-14 us quiet, 19-146 us at load
9-12, for the tree before).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import harness
from harness import absolute, alternate, fmt
from peer_tree import ROOT, before_tree, drop_tree, env_of, load_text

# tests/, which peer_tree puts on the path
from mpi_helpers import FAMILIES, PROBE, _probes  # noqa: I001

DISTANCE_GOAL_US, EXCESS_GOAL_US = 3.0, 5.0


def build_probe(family: str, directory: str) -> str | None:
    cc = FAMILIES[family][0]
    exe = os.path.join(directory, f"probe-{family}")
    p = subprocess.run([cc, "-O1", "-fopenmp", "-o", exe, PROBE], capture_output=True, text=True,
                       check=False)
    return exe if p.returncode == 0 else None


def plan(exe: str, launcher: str, phases: int) -> str:
    return f"""name = "mpi-start"
repeat = {phases}
[placement]
workers = 2
[[task]]
name = "probe"
command = ["{exe}"]
ranks = 2
launcher = "{launcher}"
timeout = 120
"""


def one_round(tree: str, exe: str, launcher: str, phases: int) -> dict[str, list[float]]:
    """The round's figures in us: every rank's distance, every phase's spread, skew, excess."""
    d = tempfile.mkdtemp(prefix="mb-start-")
    try:
        path = os.path.join(d, "plan.toml")
        with open(path, "w") as f:
            f.write(plan(exe, launcher, phases))
        env = env_of(tree)
        p = subprocess.run([sys.executable, "-m", "manybench", "run", path, "-o", d, "-q"],
                           env=env, capture_output=True, text=True, check=False)
        rows = json.loads(subprocess.run([sys.executable, "-m", "manybench", "export", d,
                                          "--format", "json"], env=env, check=True,
                                         capture_output=True, text=True).stdout)
        failed = [f"phase {r['phase']} rank {r['metrics'].get('job_rank')}: {r['error']}"
                  for r in rows if r["status"] != "ok"]
        if p.returncode != 0:
            sys.exit(f"manybench run of {tree} failed (exit {p.returncode}): "
                     + ("\n".join(failed) or p.stderr[-2000:]))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    out: dict[str, list[float]] = {"distance": [], "spread": [], "skew": [], "excess": []}
    for recs in harness.phases(rows).values():
        if any(r["status"] != "ok" for r in recs) or len(recs) != 2:
            sys.exit(f"a job failed: {[r['error'] for r in recs]}")
        first = next(r for r in recs if r["metrics"]["job_rank"] == 0)
        init = {int(p["rank"]): int(p["init_ns"]) for p in _probes(first["stdout"])}
        starts = {r["metrics"]["job_rank"]: r["start_ns"] for r in recs}
        if sorted(init) != [0, 1]:
            sys.exit(f"the probe's lines are missing: {first['stdout'][-500:]}")
        out["distance"] += [(init[k] - starts[k]) / 1e3 for k in starts]
        spread = (max(init.values()) - min(init.values())) / 1e3
        skew = (max(starts.values()) - min(starts.values())) / 1e3
        out["spread"].append(spread)
        out["skew"].append(skew)
        out["excess"].append(spread - skew)
    return out


def show(family: str):
    def line(rnd: int, got: dict[str, dict[str, list[float]]]) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {family} {what} ({load_text()}): " + "   ".join(
            f"{n}: distance {fmt(statistics.median(g['distance']))} us, spread "
            f"{fmt(statistics.median(g['spread']))} us, skew {fmt(statistics.median(g['skew']))}"
            f" us" for n, g in got.items()), flush=True)
    return line


def merged(rounds: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {k: [v for r in rounds for v in r[k]] for k in rounds[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="counted pairs")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--phases", type=int, default=20, help="phases (jobs) per round")
    ap.add_argument("--before", default="int31", help="git ref of the peer tree ('' = none)")
    ap.add_argument("--family", choices=list(FAMILIES), action="append",
                    help="one family (default: every one installed)")
    a = ap.parse_args()
    print(f"machine: {harness.machine()}; {load_text()}", flush=True)
    work = tempfile.mkdtemp(prefix="mb-start-probe-")
    exes = {f: build_probe(f, work) for f in (a.family or FAMILIES)}
    for f, exe in exes.items():
        if exe is None:
            print(f"{f}: not installed ({FAMILIES[f][0]} cannot build the probe; Debian "
                  f"{FAMILIES[f][2]}): skipped")
    made = before_tree(a.before) if a.before else None
    trees = {"this tree": ROOT, **({"before": made} if made else {})}
    ok = True
    try:
        for family, exe in exes.items():
            if exe is None:
                continue
            launcher = FAMILIES[family][1]
            runs = alternate({n: (lambda t=t, e=exe, ln=launcher: one_round(t, e, ln, a.phases))
                              for n, t in trees.items()}, a.rounds, a.warmup, show(family))
            figs = {n: merged(rs) for n, rs in runs.items()}
            beside = {k: "; ".join(f"{n} {fmt(statistics.median(g[k]))} us (p90 "
                                   f"{fmt(harness.pct(g[k], 90))})" for n, g in figs.items())
                      for k in ("distance", "spread", "skew", "excess")}
            mine = figs["this tree"]
            print(f"{family}: {len(mine['distance'])} ranks, {len(mine['spread'])} jobs; "
                  f"{load_text()}")
            ok &= absolute(f"{family}: median distance, program's clock after MPI_Init - "
                           "recorded start", statistics.median(mine["distance"]),
                           DISTANCE_GOAL_US, "us", beside=beside["distance"])
            ok &= absolute(f"{family}: median excess, program's spread - recorded skew",
                           statistics.median(mine["excess"]), EXCESS_GOAL_US, "us",
                           beside=beside["excess"])
            print(f"  spread: {beside['spread']}\n  skew: {beside['skew']}", flush=True)
    finally:
        if made:
            drop_tree(made)
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
