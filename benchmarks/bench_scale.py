#!/usr/bin/env python3
"""Scale figures (issue #11): 10,000 local phases, and null phases across 4 to 64
network-namespace nodes on one Dask scheduler; each against the code before (a git ref).

  python benchmarks/bench_scale.py                    # both parts, the goals' sizes
  python benchmarks/bench_scale.py local --phases 10000 --rounds 2
  sudo python benchmarks/bench_scale.py cluster --nodes 4,16,64 --phases 300

Peer: the same plan run by the source tree of `--before` (a git ref of this repository,
checked out into a temporary worktree with this tree's built C extension when the C sources
did not change): what the change bought, measured in the same run. Pairs alternate which
side runs first; the first pair is a warm-up, not counted (local part). `--before ""`
measures this tree alone.

local: `--phases` null phases with 2 slots on the local engine. Per run: the turnaround
(phases per second, first T0 to last T0), the coordinator's RSS growth after the first 1,000
phases (psutil, sampled every 20 ms, placed against each phase's T0), and the median skew
(max start - min start) so a faster loop is seen not to cost synchronisation.
cluster: one Dask scheduler in namespace 0 and one `manybench worker --slots 1` (one thread,
no nanny) in each of the N node namespaces, per node count; the memory of one worker, its
agent and slot is printed first. Per run: the start (command launched -> first T0), the
turnaround, the median skew after clock-offset correction, the per-phase time 1 / rate:
the curve over node counts is printed with its growth factors.

Goals (absolute, gated on this tree's median over pairs; the --before tree's beside):
  local:   >= 1,000 phases/s with 2 slots; coordinator RSS growth <= 5 MB after phase 1,000
  cluster: 64 nodes: start <= 15 s, >= 50 phases/s, median skew <= 100 us; 4 nodes >= 100
           phases/s; per-phase time sub-linear in nodes (x4 nodes -> less than x4 time)
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
import resource

import harness
from harness import START_GOAL_S, absolute, alternate, null_plan
from peer_tree import (ROOT, NodeLab, before_tree, drop_tree, env_of, load_text,
                       netns_available)

BEFORE = "fc55c4a"      # the tree issue #11's scale figures were measured on


# -- one run, watched --------------------------------------------------------------------------
class RunFailed(Exception):
    pass


def run_watched(tree: str, plan: str, *args: str, watch: bool = False) -> dict:
    """Run the plan with `tree`'s manybench; its phases' T0s and records' starts, RSS samples
    of the coordinator (watch) and when it was launched."""
    d = tempfile.mkdtemp(prefix="mb-scale-")
    try:
        path = os.path.join(d, "plan.toml")
        with open(path, "w") as f:
            f.write(plan)
        launched = time.time_ns()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.Popen([sys.executable, "-m", "manybench", "run", path, "-o", d, "-q",
                              *args], env=env_of(tree), stderr=subprocess.PIPE, text=True)
        samples: list[tuple[int, int]] = []
        if watch:
            proc = psutil.Process(p.pid)
            while p.poll() is None:
                try:
                    samples.append((time.time_ns(), proc.memory_info().rss))
                except psutil.Error:
                    break
                time.sleep(0.02)
        err = p.communicate()[1]
        ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime
        if p.returncode != 0:
            raise RunFailed(f"manybench run failed (exit {p.returncode}):\n{err[-2000:]}")
        db = sqlite3.connect(os.path.join(d, "results.db"))
        t0s = [t for (t,) in db.execute("SELECT t0_ns FROM phases ORDER BY idx")]
        starts: dict[int, list[int]] = {}
        late: set[int] = set()      # phases with a slot armed after T0 (the lead was short)
        for ph, s, st, t0, extra in db.execute("SELECT phase, start_ns, status, t0_ns, extra "
                                               "FROM records"):
            if st != "ok":
                raise RunFailed(f"a null phase failed: {st}")
            starts.setdefault(ph, []).append(s)
            if json.loads(extra).get("armed_ns", 0) > t0:
                late.add(ph)
        db.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    skews = [(max(s) - min(s)) / 1e3 for s in starts.values()]
    rate = (len(t0s) - 1) / ((t0s[-1] - t0s[0]) / 1e9) if len(t0s) > 1 else 0.0
    out = {"rate": rate, "skew": statistics.median(skews),
           "skew99": harness.pct(skews, 99), "start": (t0s[0] - launched) / 1e9,
           "late": 100 * len(late) / len(t0s),
           # cpu of the run and its slots (local engine), per phase: what load cannot inflate
           "cpu": cpu / len(t0s) * 1e6}
    if watch and len(t0s) > 1000 and samples:
        # from phase 1,000 to the last phase: the run's end (quality checks over every
        # record, the report) allocates on its own and is not growth over the phases
        at, last = t0s[1000], t0s[-1]
        base = next((r for t, r in samples if t >= at), samples[-1][1])
        during = [r for t, r in samples if at <= t <= last]
        out["growth"] = (max(during) - base) / 2**20 if during else 0.0
        out["rss"] = max(r for _, r in samples) / 2**20
    return out


def show_pair(label: str):
    def show(rnd: int, got: dict) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {label} {what}: " + "   ".join(
            f"{n}: {g['rate']:.0f} phases/s, {g['cpu']:.0f} us cpu/phase, skew {g['skew']:.1f} "
            f"us (p99 {g['skew99']:.0f}), late {g['late']:.1f}%"
            + (f", RSS {g['rss']:.1f} MB, +{g['growth']:.2f} MB after phase 1,000"
               if "growth" in g else "") + (f", start {g['start']:.1f} s" if label != "local"
                                           else "")
            for n, g in got.items()), flush=True)
    return show


def med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


# -- the local part ----------------------------------------------------------------------------
def local_part(trees: dict[str, str], phases: int, rounds: int) -> bool:
    plan = null_plan(2, phases)
    print(f"local: {phases:,} null phases, 2 slots ({load_text()})", flush=True)
    runs = alternate({n: (lambda t=t: run_watched(t, plan, watch=True))
                      for n, t in trees.items()}, rounds, 1, show_pair("local"))
    ours = runs["this tree"]
    beside = lambda key, unit: "; ".join(f"{n} {med(r, key):.1f} {unit}" for n, r in runs.items()
                                         if n != "this tree")
    ok = absolute(f"local turnaround, 2 slots, {phases:,} phases (median over pairs)",
                  med(ours, "rate"), 1000, "phases/s", "higher", beside("rate", "phases/s"))
    if "before" in runs:
        harness.info("  turnaround this tree / before", [r["rate"] for r in ours],
                     [r["rate"] for r in runs["before"]], "phases/s")
    if phases > 1000:
        ok &= absolute("coordinator RSS growth after phase 1,000 (max over pairs)",
                       max(r["growth"] for r in ours), 5, "MB", beside=beside("growth", "MB"))
    absolute("  median skew (for information: the faster loop must not cost it)",
             med(ours, "skew"), 20, "us", beside=beside("skew", "us"))
    absolute("  p99 skew (for information, bench_sync's bound)", med(ours, "skew99"), 500, "us",
             beside=beside("skew99", "us"))
    absolute("  phases with a slot armed after T0 (for information)", med(ours, "late"), 1, "%",
             beside=beside("late", "%"))
    return ok


# -- the cluster part --------------------------------------------------------------------------
def node_memory(lab: NodeLab, tree: str) -> tuple[float, float, float]:
    """RSS (MB) of one Dask worker, its agent and its slot while a pool is up (a command
    phase keeps it alive), medians over the nodes."""
    plan = f'[placement]\nworkers = {len(lab.workers)}\n[[task]]\nname = "nap"\ncommand = ["sleep", "6"]\n'
    got: list[tuple[float, float, float]] = []

    done = threading.Event()

    def look() -> None:
        # the run's start takes seconds on a loaded box: look until every node's pool is up
        while not done.is_set() and len(got) < len(lab.workers):
            got.clear()
            for w in lab.workers:
                try:
                    wp = psutil.Process(w.pid)
                    # the run's agent: the one with slots (the other is the next run's, idle)
                    ag = [c for c in wp.children()
                          if "manybench.node.server" in " ".join(c.cmdline()) and c.children()]
                    sl = [s for a in ag for s in a.children() if s.name() != "sleep"]
                    got.append((wp.memory_info().rss / 2**20, ag[0].memory_info().rss / 2**20,
                                sl[0].memory_info().rss / 2**20))
                except (psutil.Error, IndexError):
                    pass
            time.sleep(0.5)
    t = threading.Thread(target=look)
    t.start()
    run_watched(tree, plan, "--scheduler", lab.scheduler)
    done.set()
    t.join()
    if not got:
        return 0.0, 0.0, 0.0
    return tuple(statistics.median(g[i] for g in got) for i in range(3))   # type: ignore


def cluster_part(trees: dict[str, str], counts: list[int], phases: int, rounds: int) -> bool:
    free = psutil.virtual_memory().available / 2**20
    print(f"cluster: nodes {counts}, 1 slot each, {phases} null phases per run ({load_text()}; "
          f"{free:,.0f} MB available)", flush=True)
    curve: dict[str, dict[int, dict]] = {n: {} for n in trees}
    for nodes in counts:
        plan = null_plan(nodes, phases)
        for name, tree in trees.items():
            t = time.monotonic()
            lab = NodeLab(nodes, tree)
            try:
                up = time.monotonic() - t
                w, a, s = node_memory(lab, tree)
                print(f"  {nodes} nodes, {name}: cluster up in {up:.1f} s; per node RSS: Dask "
                      f"worker {w:.0f} MB, agent {a:.0f} MB, slot {s:.0f} MB; "
                      f"{psutil.virtual_memory().available / 2**20:,.0f} MB still available",
                      flush=True)
                runs = alternate({name: lambda: run_watched(tree, plan, "--scheduler",
                                                            lab.scheduler)},
                                 rounds, 0, show_pair(f"{nodes} nodes"))[name]
            except RunFailed as e:
                if name == "this tree":
                    raise
                print(f"  {nodes} nodes, {name}: {e} (the peer's figure is missing)")
                continue
            finally:
                lab.close()
            curve[name][nodes] = {k: med(runs, k) for k in ("rate", "skew", "start")}
    print("per-phase time over nodes (median over runs):")
    for name, c in curve.items():
        print(f"  {name}: " + "; ".join(f"{n} nodes {1e3 / c[n]['rate']:.2f} ms "
                                       f"({c[n]['rate']:.0f}/s, skew {c[n]['skew']:.0f} us, "
                                       f"start {c[n]['start']:.1f} s)" for n in sorted(c)))
    ours = curve["this tree"]
    ok = True
    other = {n: c for n, c in curve.items() if n != "this tree"}

    def beside(nodes: int, key: str, unit: str) -> str:
        return "; ".join(f"{n} {c[nodes][key]:.1f} {unit}" for n, c in other.items()
                         if nodes in c)
    if 4 in ours:
        ok &= absolute("4 nodes: turnaround", ours[4]["rate"], 100, "phases/s", "higher",
                       beside(4, "rate", "phases/s"))
    big = max(ours)
    if big >= 64:
        ok &= absolute(f"{big} nodes: run start (launch -> first T0)", ours[big]["start"], START_GOAL_S,
                       "s", beside=beside(big, "start", "s"))
        ok &= absolute(f"{big} nodes: turnaround", ours[big]["rate"], 50, "phases/s", "higher",
                       beside(big, "rate", "phases/s"))
        ok &= absolute(f"{big} nodes: median corrected skew", ours[big]["skew"], 100, "us",
                       beside=beside(big, "skew", "us"))
    else:
        print(f"(largest node count measured: {big}; the 64-node goals were not measured)")
    ns = sorted(ours)
    for a, b in zip(ns, ns[1:]):
        growth = ours[a]["rate"] / ours[b]["rate"]
        ok &= absolute(f"per-phase time {a} -> {b} nodes (x{b / a:g} nodes): growth",
                       growth, b / a, "x", beside="sub-linear when below the node factor")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", nargs="?", choices=["local", "cluster", "both"], default="both")
    ap.add_argument("--phases", type=int, default=None,
                    help="local: 10,000 by default; cluster: 300 per run")
    ap.add_argument("--rounds", type=int, default=2, help="counted runs per side")
    ap.add_argument("--nodes", default="4,16,64", help="cluster: node counts")
    ap.add_argument("--before", default=BEFORE, help="git ref of the peer tree ('' = none)")
    a = ap.parse_args()
    trees = {"this tree": ROOT}
    made = before_tree(a.before) if a.before else None
    if made:
        trees["before"] = made
    ok = True
    try:
        if a.part in ("local", "both"):
            ok &= local_part(trees, a.phases or 10_000, a.rounds)
        if a.part in ("cluster", "both"):
            can, why = netns_available()
            if not can:
                print(f"cannot build the namespace cluster here: {why}", file=sys.stderr)
                return 2
            ok &= cluster_part(trees, [int(x) for x in a.nodes.split(",")],
                               a.phases or 300, a.rounds)
    except RunFailed as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        if made:
            drop_tree(made)
    print(f"after: {load_text()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
