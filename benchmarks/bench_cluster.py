"""Cluster figures (issue #3 goals), on 4 network-namespace nodes x 2 slots of this machine,
one of them with its clock shifted by libfaketime; each against a peer in the same run.

  sudo python benchmarks/bench_cluster.py [--phases 200]

Goals:
  - null phases: median skew <= 100 us after offset correction, shifted node included
  - phase turnaround across 4 nodes: >= 20 null phases per second
  - agent memory: one Dask worker per node plus <= 20 MB (PSS) per slot
Peer: the same plan with the same 8 slots on the embedded local engine (no network, no
Dask), measured in the same run: the ratio shows what crossing nodes costs.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from cluster_lab import DaskLab  # noqa: E402


def run(plan_text: str, *args: str) -> tuple[list[dict], float]:
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(plan_text)
    subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q", *args],
                   check=True)
    out = subprocess.run([sys.executable, "-m", "manybench", "export", d, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", type=int, default=200)
    a = ap.parse_args()
    plan = (f'repeat = {a.phases}\n[placement]\nworkers = 8\n'
            '[[task]]\nname = "sync"\nkernel = "null"\n')
    with DaskLab(4, slots=2, shifted=3) as lab:
        rows, rate = run(plan, "--scheduler", lab.scheduler)
        off = {r["node"]: r["metrics"]["clock_offset_ns"] for r in rows}
        err = max(r["metrics"]["clock_error_ns"] for r in rows)
        # memory while a pool is up: a long phase keeps the agents and slots alive
        d = tempfile.mkdtemp(prefix="mb-bench-")
        with open(os.path.join(d, "p.toml"), "w") as f:
            f.write('[placement]\nworkers = 8\n[[task]]\nname = "nap"\ncommand = ["sleep", "4"]\n')
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", os.path.join(d, "p.toml"),
                                 "-o", d, "-q", "--scheduler", lab.scheduler])
        time.sleep(2.5)
        workers = [psutil.Process(p.pid) for p in lab.workers.values()]
        agents = [c for w in workers for c in w.children() if "agent_process" in " ".join(c.cmdline())]
        slots = [s for ag in agents for s in ag.children() if s.name() != "sleep"]
        w_pss, a_pss, s_pss = pss_mb([w.pid for w in workers]), pss_mb([x.pid for x in agents]), \
            pss_mb([x.pid for x in slots])
        proc.wait()
    local_rows, local_rate = run(plan)
    cs, ls = skews(rows), skews(local_rows)
    print(f"4 nodes x 2 slots, {len(cs)} null phases: median skew {statistics.median(cs):.1f} us "
          f"(goal <= 100), p99 {sorted(cs)[int(0.99 * len(cs)) - 1]:.1f} us; clock offsets "
          + ", ".join(f"{n} {o / 1e3:+.1f} us" for n, o in sorted(off.items()))
          + f" (n3 shifted +4000 us by libfaketime); error bound <= {err / 1e3:.1f} us")
    print(f"  peer (local engine, same 8 slots): median skew {statistics.median(ls):.1f} us -> "
          f"cluster/local ratio {statistics.median(cs) / max(statistics.median(ls), 1e-3):.2f}")
    print(f"turnaround: {rate:.1f} null phases/s across 4 nodes (goal >= 20); local engine "
          f"{local_rate:.1f}/s -> ratio {rate / local_rate:.2f}")
    print(f"memory: Dask worker PSS median {statistics.median(w_pss):.1f} MB per node; agent "
          f"process {statistics.median(a_pss):.1f} MB; slots median {statistics.median(s_pss):.1f} "
          f"MB, max {max(s_pss):.1f} MB each (goal <= 20 MB per slot)")


if __name__ == "__main__":
    main()
