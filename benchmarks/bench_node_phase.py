#!/usr/bin/env python3
"""CPU per node-phase (issue 21): what every process involved in a Dask run spends on one
node's share of one phase, from /proc, against the tree before the change.

  sudo python benchmarks/bench_node_phase.py                 # both parts, the goals' sizes
  sudo python benchmarks/bench_node_phase.py cluster --nodes 16,64 --phases 200 --rounds 3
  python benchmarks/bench_node_phase.py records --rounds 5
  sudo python benchmarks/bench_node_phase.py cluster --nodes 16 --before '' --fanout 4   # relays

cluster: one Dask scheduler in namespace 0 and one `manybench worker --slots 1` in each of N
node namespaces (a fresh lab per run, running the measured tree's code), `--phases` null
phases with N workers. While the run goes, the CPU times (user + system, psutil: /proc) of
every process involved are read twice, once a fifth of the phases are stored and again at
nine tenths: the coordinator (`manybench run`), the scheduler, each Dask worker, each agent
process (the run's and the idle one started ahead) and each slot. CPU per node-phase of a
kind = its CPU between the two readings / (phases stored between them x N). Idle
background (heartbeats, monitors) counts: it is what each process costs while the run goes.
Each run's start is timed too: `manybench run` launched -> its first phase seen stored (the
results file polled every 50 ms; the lab's scheduler and workers are up before the launch).
records: the coordinator's record path alone (benchmarks/records_path.py, in a process of
the measured tree): node replies as they come off the wire -> decoded, stamps moved into the
coordinator's clock, records, stall check, the phase committed; CPU per record at 64 nodes x
64 slots (the per-node costs spread thin, as at 1,000 x 64) and at 64 x 1 (for information).

Peer: the same, run by the tree before the change (`--before REF`, default main's commit at
the change's start), alternated pair by pair; each figure printed as this tree / before
(median of the paired ratios) beside the goal, judged on this tree's median.
Goals: total CPU per node-phase <= 1.0 ms at 16 and 64 nodes; the coordinator's <= 0.1 ms
per node-phase at 64 nodes; the record path <= 10 us per record; at 64 nodes, the start
<= 15 s (bench_scale's goal; printed at every node count).
Exit status 1 when a goal is missed, 2 when namespaces are not available (cluster part).
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
import threading
import time

import psutil

import harness
from harness import START_GOAL_S, StoredPhases, absolute, alternate, info, write_null_plan
from peer_tree import ROOT, NodeLab, before_tree, drop_tree, env_of, machine, netns_available

BEFORE = "72bff4a"    # main when issue 21's change began
KINDS = ("coordinator", "scheduler", "worker", "agent", "slot")
RUN_ARGS: list[str] = []    # added to every measured `manybench run` (--fanout N: relays)


# -- the processes of a run, by kind -----------------------------------------------------------
def processes(lab: NodeLab, coordinator: int) -> dict[str, list[psutil.Process]]:
    out: dict[str, list[psutil.Process]] = {k: [] for k in KINDS}
    for kind, pid in (("coordinator", coordinator), ("scheduler", lab.sched.pid)):
        try:
            out[kind].append(psutil.Process(pid))
        except psutil.Error:
            pass
    for w in lab.workers:
        try:
            wp = psutil.Process(w.pid)
            out["worker"].append(wp)
            for a in wp.children():
                if "manybench.node.server" in " ".join(a.cmdline()):
                    out["agent"].append(a)
                    out["slot"] += a.children()
        except psutil.Error:
            pass
    return out


def cpu_by_kind(procs: dict[str, list[psutil.Process]]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for kind, ps in procs.items():
        got = out.setdefault(kind, {})
        for p in ps:
            try:
                t = p.cpu_times()
                got[p.pid] = t.user + t.system
            except psutil.Error:
                pass
    return out


class Watch(threading.Thread):
    """Reads every process's CPU when a fifth and nine tenths of the phases are stored."""

    def __init__(self, lab: NodeLab, run: subprocess.Popen, db: str, phases: int) -> None:
        super().__init__(daemon=True)
        self.lab, self.run_, self.db = lab, run, db
        self.marks = [max(5, phases // 5), phases * 9 // 10]
        self.readings: list[tuple[float, dict[str, dict[int, float]]]] = []
        self.first_ns = 0      # when the first phase was seen stored (monotonic clock)

    def run(self) -> None:
        stored = StoredPhases(self.db)
        try:
            while self.marks and self.run_.poll() is None:
                n = stored.count()
                if n and not self.first_ns:
                    self.first_ns = time.monotonic_ns()
                if n >= self.marks[0]:
                    procs = processes(self.lab, self.run_.pid)
                    cpu = cpu_by_kind(procs)
                    self.readings.append(((n + stored.count()) / 2, cpu))
                    self.marks.pop(0)
                time.sleep(0.05)
        finally:
            stored.close()


def measure(lab: NodeLab, tree: str, nodes: int, phases: int) -> dict:
    d = tempfile.mkdtemp(prefix="mb-nodephase-")
    try:
        plan = write_null_plan(d, nodes, phases)
        launched = time.monotonic_ns()
        run = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q",
                                "--scheduler", lab.scheduler, *RUN_ARGS], env=env_of(tree),
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        watch = Watch(lab, run, os.path.join(d, "results.db"), phases)
        watch.start()
        err = run.communicate()[1]
        watch.join()
        if run.returncode != 0:
            raise RuntimeError(f"the run failed (exit {run.returncode}):\n{err[-2000:]}")
        if len(watch.readings) < 2:
            raise RuntimeError("the run ended before both readings: give it more --phases")
        (n0, a), (n1, b) = watch.readings
        per = {k: sum(b[k].get(pid, 0.0) - a[k].get(pid, 0.0) for pid in b[k])
               / ((n1 - n0) * nodes) * 1e3 for k in KINDS}
        per["total"] = sum(per[k] for k in KINDS)
        con = sqlite3.connect(os.path.join(d, "results.db"))
        t0s = [t for (t,) in con.execute("SELECT t0_ns FROM phases ORDER BY idx")]
        notes = json.loads(con.execute("SELECT notes FROM runs").fetchone()[0])
        con.close()
        per["rate"] = (len(t0s) - 1) / ((t0s[-1] - t0s[0]) / 1e9)
        # the start: `manybench run` launched -> its first phase stored (seen within 50 ms)
        per["start"] = (watch.first_ns - launched) / 1e9
        per["nodes_start"] = notes.get("start_s") or 0.0   # of it: the engine starting the nodes
        return per
    finally:
        shutil.rmtree(d, ignore_errors=True)


def one_run(tree: str, nodes: int, phases: int) -> dict:
    began = time.monotonic()
    lab = NodeLab(nodes, tree)
    try:
        up = time.monotonic() - began     # the lab's scheduler and workers, before the run
        return {**measure(lab, tree, nodes, phases), "lab": up}
    finally:
        lab.close()


def show(nodes: int):
    def line(rnd: int, got: dict) -> None:
        for name, g in got.items():
            print(f"  {nodes} nodes, {name}, round {rnd + 1}: " + ", ".join(
                f"{k} {g[k]:.3f}" for k in (*KINDS, "total")) + f" ms per node-phase; "
                f"{g['rate']:.1f} phases/s; start {g['start']:.1f} s, of it {g['nodes_start']:.1f} "
                f"s starting the nodes (lab up in {g['lab']:.1f} s before it) ({harness_load()})",
                flush=True)
    return line


def harness_load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def cluster_part(trees: dict[str, str], counts: list[int], phases: int, rounds: int) -> bool:
    ok = True
    for nodes in counts:
        print(f"cluster: {nodes} namespace nodes x 1 slot, {phases} null phases per run",
              flush=True)
        runs = alternate({n: (lambda t=t: one_run(t, nodes, phases)) for n, t in trees.items()},
                         rounds, 0, show(nodes))
        ours = runs["this tree"]
        med = {k: statistics.median(r[k] for r in ours)
               for k in (*KINDS, "total", "rate", "start")}
        before = runs.get("before")
        print(f"{nodes} nodes, CPU per node-phase, medians (ms): " + ", ".join(
            f"{k} {med[k]:.3f}" + (f" (before {statistics.median(r[k] for r in before):.3f})"
                                   if before else "") for k in (*KINDS, "total")))
        if before:
            for k in ("total", *KINDS):
                info(f"{nodes} nodes: {k} CPU per node-phase, this tree / before",
                     [r[k] for r in ours], [r[k] for r in before], "ms", "lower")
        ok &= absolute(f"{nodes} nodes: total CPU per node-phase (median)", med["total"], 1.0,
                       "ms", beside=f"ratio to before above; {med['rate']:.1f} phases/s")
        if before:
            info(f"{nodes} nodes: start (launch -> first stored phase), this tree / before",
                 [r["start"] for r in ours], [r["start"] for r in before], "s", "lower")
        started = absolute(f"{nodes} nodes: start, `manybench run` launched -> first phase "
                           "stored (median)", med["start"], START_GOAL_S, "s",
                           beside=f"lab up {statistics.median(r['lab'] for r in ours):.1f} s "
                           f"before it; {harness_load()}")
        if nodes >= 64:          # the goal is bench_scale's, set at 64 nodes
            ok &= started
            ok &= absolute(f"{nodes} nodes: coordinator CPU per node-phase (median)",
                           med["coordinator"], 0.1, "ms")
    return ok


def records_run(tree: str, nodes: int, slots: int, phases: int) -> float:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "records_path.py"),
                          str(nodes), str(slots), str(phases)], env=env_of(tree),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["us_per_record"]


def records_part(trees: dict[str, str], rounds: int) -> bool:
    ok = True
    for nodes, slots, phases, gated in ((64, 64, 10, True), (64, 1, 300, False)):
        print(f"records: the coordinator's record path, {nodes} nodes x {slots} slots",
              flush=True)
        runs = alternate({n: (lambda t=t: records_run(t, nodes, slots, phases))
                          for n, t in trees.items()}, rounds, 1,
                         harness.show_round(f"{nodes}x{slots}", "us/record"))
        ours = statistics.median(runs["this tree"])
        if "before" in runs:
            info(f"record path {nodes}x{slots}: CPU per record, this tree / before",
                 runs["this tree"], runs["before"], "us", "lower")
        if gated:
            ok &= absolute(f"record path {nodes}x{slots}: CPU per record (median)", ours, 10,
                           "us")
        else:
            print(f"record path {nodes}x{slots}: {ours:.1f} us per record (median, for "
                  "information: one record per node, the per-node decoding counts in it)")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", nargs="?", choices=["cluster", "records", "both"], default="both")
    ap.add_argument("--nodes", default="16,64", help="cluster: node counts")
    ap.add_argument("--phases", type=int, default=200, help="cluster: null phases per run")
    ap.add_argument("--rounds", type=int, default=3, help="counted pairs")
    ap.add_argument("--before", default=BEFORE, help="git ref of the peer tree ('' = none)")
    ap.add_argument("--fanout", help="cluster: `run --fanout` for every run (relays; the "
                    "tree before has none: give --before '' with it)")
    a = ap.parse_args()
    if a.fanout:
        RUN_ARGS.extend(["--fanout", a.fanout])
    print(f"machine: {machine()}; {harness_load()}", flush=True)
    trees = {"this tree": ROOT}
    made = before_tree(a.before) if a.before else None
    if made:
        trees["before"] = made
    ok = True
    try:
        if a.part in ("records", "both"):
            ok &= records_part(trees, a.rounds)
        if a.part in ("cluster", "both"):
            can, why = netns_available()
            if not can:
                print(f"cannot build the namespace cluster here: {why}", file=sys.stderr)
                return 2
            ok &= cluster_part(trees, [int(x) for x in a.nodes.split(",")], a.phases,
                               a.rounds)
    finally:
        if made:
            drop_tree(made)
    print(f"after: {harness_load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
