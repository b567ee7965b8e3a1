#!/usr/bin/env python3
"""MPI jobs started at T0: start skew of ranks released at T0 across concurrent jobs, against
the same ranks released by MPI_Barrier; and what interposition costs a ping-pong loop.

    python benchmarks/bench_mpi_sync.py [--rounds 11] [--warmup 1] [--phases 20]
                                        [--jobs 2] [--ranks R] [--iters 200000] [--peer-only]

Both sides run mbmpi (the project's MPI test program, `manybench mpi-build`, built with Open
MPI's mpicc.openmpi) under Open MPI's mpirun.openmpi on this machine, ranks pinned as
manybench's slots are. R defaults to the cpus / jobs (at least 1), so the ranks do not share
cpus (oversubscribed ranks busy-poll against each other: that measures the scheduler).
The first lines name the machine and the MPI.

Skew (each round: one manybench run against one peer run):
  manybench  a command task with `ranks = R`, `launcher = "mpirun"`, workers = J x R: J
             concurrent jobs of R ranks each, `phases` phases; per phase skew = max - min of
             every rank's start stamp (all jobs together); the round's figure the median
  peer       the same J x R ranks in ONE mpirun job, `mbmpi release`: per trial the ranks
             leave an MPI_Barrier and stamp CLOCK_REALTIME; skew = max - min over ranks,
             `phases` trials; the round's figure the median. A barrier can only release the
             ranks of one job: the peer has the easier task.
  gates      median skew <= 50 us; median of the paired ratios manybench / barrier <= 1.0
             (printed with its distribution-free 95% interval, harness.median_interval)
Interposition (each round: one manybench phase against one plain mpirun):
  manybench  `mbmpi latency -m 8:8 -i ITERS` as a 2-rank job (start at T0: the ranks run
             with the PMPI interposer preloaded), latency from the rank-0 record (parse osu)
  peer       the same command under the same mpirun, pinned the same, no manybench
  gate       median of the paired ratios <= 1.01 (at most 1% slower)

Without `ranks` support in this manybench (`run --dry-run` refuses the plan), or with
--peer-only, only the peers are measured and printed, and the exit status is 2. Figures on a
shared or virtual machine are noisy (oversubscribed ranks busy-poll): read the pairs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import harness
from harness import Goal, absolute, fmt, verdict

from manybench.kernels.mpi_program import MpiBuildError, build
from manybench.parsers import PARSERS

SKEW_GOAL_US = 50.0
FAMILY, LAUNCHER = "openmpi", "mpirun.openmpi"


def plan_skew(exe: str, jobs: int, ranks: int, phases: int) -> str:
    return f"""name = "mpi-sync-skew"
repeat = {phases}
[placement]
workers = {jobs * ranks}
[[task]]
name = "start"
command = ["{exe}", "barrier", "-i", "1", "-x", "0"]
ranks = {ranks}
launcher = "{LAUNCHER}"
timeout = 120
"""


def plan_pingpong(exe: str, iters: int) -> str:
    return f"""name = "mpi-sync-pingpong"
[placement]
workers = 2
[[task]]
name = "pingpong"
command = ["{exe}", "latency", "-m", "8:8", "-i", "{iters}", "-x", "{max(iters // 10, 1)}"]
ranks = 2
launcher = "{LAUNCHER}"
parse = "osu"
timeout = 300
"""


def ranks_supported(exe: str) -> str | None:
    """None when this manybench accepts a command task with ranks, else its refusal."""
    with tempfile.TemporaryDirectory(prefix="mb-bench-") as d:
        path = os.path.join(d, "plan.toml")
        with open(path, "w") as f:
            f.write(plan_skew(exe, 2, 2, 1))
        p = subprocess.run([sys.executable, "-m", "manybench", "run", path, "--dry-run"],
                           env=harness.ENV, capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip() or f"exit {p.returncode}")


def ours_skew_us(exe: str, jobs: int, ranks: int, phases: int) -> float:
    rows = harness.run_plan(plan_skew(exe, jobs, ranks, phases))
    skews = []
    for recs in harness.phases(rows).values():
        if any(r["status"] != "ok" for r in recs):
            sys.exit(f"a job failed: {[r['error'] for r in recs if r['status'] != 'ok']}")
        if len(recs) != jobs * ranks:
            sys.exit(f"expected one record per rank ({jobs * ranks}), got {len(recs)}")
        skews.append((max(r["start_ns"] for r in recs) - min(r["start_ns"] for r in recs)) / 1e3)
    return statistics.median(skews)


def _mpirun(n: int) -> list[str]:
    return harness.mpirun_pinned(harness.slot_affinity(n), LAUNCHER)


def mpi_version() -> str:
    p = subprocess.run([LAUNCHER, "--version"], capture_output=True, text=True)
    return (p.stdout.strip().splitlines() or ["unknown"])[0]


def peer_skew_us(exe: str, n: int, trials: int) -> float:
    p = subprocess.run([*_mpirun(n), exe, "release", "-i", str(trials)], capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"mbmpi release failed (exit {p.returncode}):\n{p.stderr}")
    rows = p.stdout.split("# Trial")[1].splitlines()[1:]
    return statistics.median(float(r.split()[1]) for r in rows if r.strip())


def ours_latency_us(exe: str, iters: int) -> float:
    rows = harness.run_plan(plan_pingpong(exe, iters))
    rank0 = [r for r in rows if "latency_us" in (r.get("metrics") or {})]
    if len(rank0) != 1:
        sys.exit(f"expected the job's parsed output on one record, got {len(rank0)}")
    return float(rank0[0]["metrics"]["latency_us"])


def peer_latency_us(exe: str, iters: int) -> float:
    p = subprocess.run([*_mpirun(2), exe, "latency", "-m", "8:8", "-i", str(iters), "-x",
                        str(max(iters // 10, 1))], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"mbmpi latency failed (exit {p.returncode}):\n{p.stderr}")
    return PARSERS["osu"](p.stdout, p.stderr)["latency_us"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--rounds", type=int, default=11,
                    help="counted pairs (a shared machine needs many: read the interval)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--phases", type=int, default=20, help="phases (and barrier trials)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ranks", type=int, default=0,
                    help="ranks per job (default: cpus / jobs, at least 1)")
    ap.add_argument("--iters", type=int, default=200000,
                    help="ping-pong iterations (a loop of ~50 ms at 0.13 us: a 5 ms one is at "
                         "the mercy of one preemption)")
    ap.add_argument("--peer-only", action="store_true", help="measure only the peers")
    a = ap.parse_args()
    a.ranks = a.ranks or max(1, len(os.sched_getaffinity(0)) // a.jobs)
    try:
        exe = build(FAMILY)
    except MpiBuildError as e:
        print(f"peer missing: {e}", file=sys.stderr)
        return 2
    why = None if a.peer_only else ranks_supported(exe)
    n = a.jobs * a.ranks
    print(f"machine: {harness.machine()}", flush=True)
    print(f"MPI: {mpi_version()}; mbmpi: {exe}", flush=True)
    print(f"{a.jobs} jobs x {a.ranks} ranks, {a.phases} phases per round, {a.rounds} rounds "
          f"+ {a.warmup} warm-up, ping-pong {a.iters} iterations", flush=True)
    if a.peer_only or why:
        if why:
            print(f"manybench here runs no `ranks` task ({why.splitlines()[-1]}): peers only")
        skews = [peer_skew_us(exe, n, a.phases) for _ in range(a.warmup + a.rounds)]
        lats = [peer_latency_us(exe, a.iters) for _ in range(a.warmup + a.rounds)]
        skews, lats = skews[a.warmup:], lats[a.warmup:]
        print(f"barrier release skew ({n} ranks, one job): median "
              f"{fmt(statistics.median(skews))} us; rounds " + " ".join(map(fmt, skews)))
        print(f"plain ping-pong latency (8 bytes): median {fmt(statistics.median(lats))} us;"
              " rounds " + " ".join(map(fmt, lats)))
        return 2
    skew = harness.alternate({"manybench": lambda: ours_skew_us(exe, a.jobs, a.ranks,
                                                                  a.phases),
                              "barrier": lambda: peer_skew_us(exe, n, a.phases)},
                             a.rounds, a.warmup, harness.show_round("skew", "us"))
    lat = harness.alternate({"manybench": lambda: ours_latency_us(exe, a.iters),
                             "plain": lambda: peer_latency_us(exe, a.iters)},
                            a.rounds, a.warmup, harness.show_round("ping-pong", "us"))
    med = statistics.median(skew["manybench"])
    ok = absolute(f"start skew, {a.jobs} jobs x {a.ranks} ranks released at T0", med,
                  SKEW_GOAL_US, "us",
                  beside=f"barrier release {fmt(statistics.median(skew['barrier']))} us")
    ok &= verdict(Goal("start skew T0 / MPI_Barrier", 1.0, "lower"), skew["manybench"],
                  skew["barrier"], "us")
    ok &= verdict(Goal("ping-pong latency with interposition / plain", 1.01, "lower"),
                  lat["manybench"], lat["plain"], "us")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
