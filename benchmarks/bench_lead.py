#!/usr/bin/env python3
"""The lead under load and after stalls (issue 30): null phases on the local engine, 2 slots,
this tree against the tree before, pairs alternated.

  python benchmarks/bench_lead.py                       # 1,000 phases, 3 pairs, before = int29
  python benchmarks/bench_lead.py --phases 500 --rounds 2 --before ''

Cases, each run by both trees in every pair (the order alternates from pair to pair):
  quiet    `--phases` null phases, 2 slots (the machine as it is: its other work counts)
  spinner  the same beside a competing 2-cpu spinner (two busy loops of this script's own)
  stops    quiet, with the run's slots SIGSTOPped for 0.5 s twice: once 30% of the phases are
           stored and again 20 phases later (two late starts of 500 ms)
Per run, from its results.db: phases/s (first T0 to last), each phase's lead (T0 - go) and
its lateness (a slot armed after T0; the latest start - T0).

Figures (gated on this tree's median over pairs; the peer's beside, and this tree / before as
the median of the paired ratios):
  - phases/s beside the spinner / phases/s quiet: goal >= 0.5
  - stops: median lead of the 100 phases after the second stall / median lead of the phases
    before the first (a stop's phase: the latest-starting of the 3 in flight when it came,
    if its latest slot started >= 0.25 s after T0): goal <= 1.5
  - what the leads cost in lateness, for information: late phases (a slot armed after T0 or
    started over 100 us after it: analysis/late.py), armed late, latest start - T0 mean/p99
Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import harness
from harness import StoredPhases, absolute, alternate, info, machine, null_plan
from peer_tree import ROOT, before_tree, drop_tree, env_of

from manybench.analysis.late import LATE_NS

STOP_S = 0.5
STALL_NS = 250_000_000        # a stop's phase: its latest slot started this late
AFTER = 100                   # phases after the second stall whose leads are compared
CASES = ("quiet", "spinner", "stops")


def spinner(n: int = 2) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_slots(run: subprocess.Popen, db: str, at: list[int]) -> list[int]:
    """SIGSTOP the run's slots (its children) for STOP_S once each count in `at` is stored;
    how many phases were stored at each stop."""
    stored = StoredPhases(db)
    counts = []
    try:
        for mark in at:
            while (n := stored.count()) < mark and run.poll() is None:
                time.sleep(0.002)
            counts.append(n)
            slots = psutil.Process(run.pid).children()
            for p in slots:
                p.suspend()
            time.sleep(STOP_S)
            for p in slots:
                p.resume()
    finally:
        stored.close()
    return counts


def one_run(tree: str, case: str, phases: int) -> dict:
    d = tempfile.mkdtemp(prefix="mb-lead-")
    loops = spinner() if case == "spinner" else []
    try:
        plan = os.path.join(d, "plan.toml")
        with open(plan, "w") as f:
            f.write(null_plan(2, phases))
        run = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q"],
                               env=env_of(tree), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        stops = []
        if case == "stops":
            first = int(phases * 0.3)
            stops = stop_slots(run, os.path.join(d, "results.db"), [first, first + 20])
        err = run.communicate()[1]
        if run.returncode != 0:
            sys.exit(f"the run failed ({run.returncode}): {err[-2000:]}")
        return figures(os.path.join(d, "results.db"), stops)
    finally:
        for p in loops:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


def figures(db_path: str, stops: list[int]) -> dict:
    """The run's figures; `stops`: how many phases were stored at each stop (the phase it
    stalled is the latest of the few after)."""
    db = sqlite3.connect(db_path)
    phases = list(db.execute("SELECT idx, t0_ns, go_ns FROM phases ORDER BY idx"))
    armed: dict[int, int] = {}
    start: dict[int, int] = {}
    for ph, s, extra in db.execute("SELECT phase, start_ns, extra FROM records"):
        armed[ph] = max(armed.get(ph, 0), json.loads(extra).get("armed_ns", 0))
        start[ph] = max(start.get(ph, 0), s)
    db.close()
    leads = [t0 - go for _, t0, go in phases]
    late_ns = [start.get(i, t0) - t0 for i, t0, _ in phases]
    t0s = [t0 for _, t0, _ in phases]
    # the phase each stop stalled: the latest of the phases in flight then (the one whose
    # go was sent, or the next); a stop that fell on no phase's start leaves none
    stalls = [k for k in (max(range(n, min(n + 3, len(late_ns))), key=late_ns.__getitem__)
                          for n in stops if n < len(late_ns)) if late_ns[k] >= STALL_NS]
    out = {"rate": (len(t0s) - 1) / ((t0s[-1] - t0s[0]) / 1e9),
           "late": 100 * sum(armed.get(i, 0) > t0 or lat > LATE_NS
                             for (i, t0, _), lat in zip(phases, late_ns)) / len(phases),
           "armed_late": 100 * sum(armed.get(i, 0) > t0 for i, t0, _ in phases) / len(phases),
           "late_mean": statistics.mean(late_ns) / 1e6, "late_p99": harness.pct(late_ns, 99) / 1e6,
           "lead": statistics.median(leads) / 1e6, "stalls": len(stalls)}
    if len(stalls) == 2:
        first, second = stalls
        after = leads[second + 1:second + 1 + AFTER]
        out["recovered"] = statistics.median(after) / statistics.median(leads[:first])
        out["armed_stalls"] = sum(armed.get(phases[k][0], 0) - phases[k][1] >= STALL_NS
                                  for k in stalls)
    return out


def show(rnd: int, got: dict) -> None:
    for name, cases in got.items():
        print(f"  round {rnd + 1}, {name}: " + "; ".join(
            f"{c} {g['rate']:.0f} phases/s, lead med {g['lead']:.2f} ms, late {g['late']:.1f}% "
            f"(armed {g['armed_late']:.1f}%), latest start mean {g['late_mean']:.2f} ms p99 "
            f"{g['late_p99']:.1f} ms" + (f", {g['stalls']} stalls ({g.get('armed_stalls', 0)} "
                                        f"armed late), leads after / before "
                                        f"{g['recovered']:.2f}" if 'recovered' in g else "")
            for c, g in cases.items()) + f" ({load()})", flush=True)


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3, help="counted pairs")
    ap.add_argument("--before", default="int29", help="git ref of the peer tree ('' = none)")
    a = ap.parse_args()
    print(f"machine: {machine()}; {load()}", flush=True)
    trees = {"this tree": ROOT}
    made = before_tree(a.before) if a.before else None
    if made:
        trees["before"] = made
    try:
        runs = alternate({n: (lambda t=t: {c: one_run(t, c, a.phases) for c in CASES})
                          for n, t in trees.items()}, a.rounds, 0, show)
    finally:
        if made:
            drop_tree(made)
    ok = True
    share = {n: [r["spinner"]["rate"] / r["quiet"]["rate"] for r in rs] for n, rs in runs.items()}
    recovered = {n: [r["stops"]["recovered"] for r in rs if "recovered" in r["stops"]]
                 for n, rs in runs.items()}
    before = "before" in runs
    if before:
        info("phases/s beside a 2-cpu spinner, this tree / before",
             [r["spinner"]["rate"] for r in runs["this tree"]],
             [r["spinner"]["rate"] for r in runs["before"]], "phases/s")
        info("phases/s quiet, this tree / before", [r["quiet"]["rate"] for r in runs["this tree"]],
             [r["quiet"]["rate"] for r in runs["before"]], "phases/s")
    beside = lambda d: "; ".join(f"{n} {statistics.median(v):.3g}" for n, v in d.items()
                                 if n != "this tree" and v)
    ok &= absolute("phases/s beside a 2-cpu spinner / quiet (median over pairs)",
                   statistics.median(share["this tree"]), 0.5, "x", "higher", beside(share))
    if recovered["this tree"]:
        ok &= absolute(f"median lead of the {AFTER} phases after two 0.5 s stops / before them",
                       statistics.median(recovered["this tree"]), 1.5, "x",
                       beside=beside(recovered))
    else:
        print("stops: no run had two stalled phases (the stops fell between phases?)")
        ok = False
    for case in CASES:
        for key, what in (("late", "late phases %"), ("armed_late", "armed late %"),
                          ("late_mean", "latest start - T0 mean ms"),
                          ("late_p99", "latest start - T0 p99 ms")):
            print(f"  {case}: {what}: " + "; ".join(
                f"{n} {statistics.median(r[case][key] for r in rs):.3g}"
                for n, rs in runs.items()) + " (for information: the cost of the leads)")
    print(f"after: {load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
