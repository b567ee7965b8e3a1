"""Cluster figures (issue #3 goals), on 4 network-namespace nodes x 2 slots of this machine,
one of them with its clock shifted by libfaketime; each against a peer in the same run.

  sudo python benchmarks/bench_cluster.py [--phases 200]

Goals:
  - null phases: median skew <= 100 us after offset correction, shifted node included
  - phase turnaround across 4 nodes: >= 20 null phases per second
  - agent memory: one Dask worker per node plus <= 20 MB (PSS) per slot
Peer: the same plan with the same 8 slots on the embedded local engine (no network, no
Dask), measured in the same run, `--rounds` times alternating with the cluster: the median of
the paired ratios shows what crossing nodes costs (printed beside the goals).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from cluster_lab import DaskLab  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": harness.SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def run(plan_text: str, *args: str) -> tuple[list[dict], float]:
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(plan_text)
    subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q", *args],
                   check=True, env=ENV)
    out = subprocess.run([sys.executable, "-m", "manybench", "export", d, "--format", "json"],
                         check=True, capture_output=True, text=True, env=ENV).stdout
    rows = json.loads(out)
    t0s = sorted({r["t0_ns"] for r in rows})
    rate = (len(t0s) - 1) / ((t0s[-1] - t0s[0]) / 1e9) if len(t0s) > 1 else 0.0
    return rows, rate


def skews(rows: list[dict]) -> list[float]:
    by: dict[int, list[int]] = {}
    for r in rows:
        by.setdefault(r["phase"], []).append(r["start_ns"])
    return [(max(v) - min(v)) / 1e3 for v in by.values()]


def pss_mb(pids: list[int]) -> list[float]:
    return [psutil.Process(p).memory_full_info().pss / 2**20 for p in pids]


def absolute(name: str, value: float, limit: float, unit: str, at_least: bool = False,
             beside: str = "") -> bool:
    ok = value >= limit if at_least else value <= limit
    print(f"{name}: {value:,.1f} {unit} (goal {'>=' if at_least else '<='} {limit:g} {unit}) "
          f"{'PASS' if ok else 'FAIL'}" + (f"; {beside}" if beside else ""), flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    plan = (f'repeat = {a.phases}\n[placement]\nworkers = 8\n'
            '[[task]]\nname = "sync"\nkernel = "null"\n')
    cluster: dict[str, list[float]] = {"skew": [], "rate": []}
    local: dict[str, list[float]] = {"skew": [], "rate": []}
    with DaskLab(4, slots=2, shifted=3) as lab:
        for rnd in range(a.rounds):
            for where in (["cluster", "local"] if rnd % 2 == 0 else ["local", "cluster"]):
                rows, rate = run(plan, "--scheduler", lab.scheduler) if where == "cluster" \
                    else run(plan)
                got = cluster if where == "cluster" else local
                got["skew"].append(statistics.median(skews(rows)))
                got["rate"].append(rate)
                if where == "cluster":
                    off = {r["node"]: r["metrics"]["clock_offset_ns"] for r in rows}
                    err = max(r["metrics"]["clock_error_ns"] for r in rows)
            print(f"  round {rnd + 1}: median skew cluster {cluster['skew'][-1]:.1f} us, local "
                  f"{local['skew'][-1]:.1f} us; phases/s cluster {cluster['rate'][-1]:.1f}, local "
                  f"{local['rate'][-1]:.1f}", flush=True)
        # memory while a pool is up: a long phase keeps the agents and slots alive
        d = tempfile.mkdtemp(prefix="mb-bench-")
        with open(os.path.join(d, "p.toml"), "w") as f:
            f.write('[placement]\nworkers = 8\n[[task]]\nname = "nap"\ncommand = ["sleep", "4"]\n')
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run",
                                 os.path.join(d, "p.toml"), "-o", d, "-q", "--scheduler",
                                 lab.scheduler], env=ENV)
        time.sleep(2.5)
        workers = [psutil.Process(p.pid) for p in lab.workers.values()]
        agents = [c for w in workers for c in w.children()
                  if "manybench.node.server" in " ".join(c.cmdline())]
        slots = [s for ag in agents for s in ag.children() if s.name() != "sleep"]
        w_pss, a_pss, s_pss = pss_mb([w.pid for w in workers]), pss_mb([x.pid for x in agents]), \
            pss_mb([x.pid for x in slots])
        proc.wait()
    print("clock offsets " + ", ".join(f"{n} {o / 1e3:+.1f} us" for n, o in sorted(off.items()))
          + f" (n3 shifted by libfaketime); error bound <= {err / 1e3:.1f} us")
    ok = absolute("4 nodes x 2 slots: median skew, shifted node included (median of rounds)",
                  statistics.median(cluster["skew"]), 100, "us",
                  beside=f"local engine {statistics.median(local['skew']):.1f} us")
    harness.verdict(harness.Goal("skew cluster / local (information)", float("inf"),
                                 higher_is_better=False), cluster["skew"], local["skew"], "us")
    ok &= absolute("turnaround across 4 nodes", statistics.median(cluster["rate"]), 20,
                   "phases/s", at_least=True,
                   beside=f"local engine {statistics.median(local['rate']):.1f}/s")
    harness.verdict(harness.Goal("turnaround cluster / local (information)", 0.0),
                    cluster["rate"], local["rate"], "phases/s")
    ok &= absolute("slot PSS, max", max(s_pss), 20, "MB",
                   beside=f"Dask worker {statistics.median(w_pss):.1f} MB per node; agent "
                          f"process {statistics.median(a_pss):.1f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
