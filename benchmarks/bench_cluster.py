#!/usr/bin/env python3
"""Cluster figures (issue #3 goals) on 4 network-namespace nodes x 2 slots of this machine,
one of them with its clock shifted by libfaketime; each against a peer in the same run.

  sudo python benchmarks/bench_cluster.py [--phases 200] [--rounds 3]

manybench runs `--phases` null phases with 8 workers through a Dask scheduler (one `manybench
worker` per namespace node, tests/cluster_lab.py). Peer: the same plan, the same 8 slots, on
the embedded local engine (no network, no Dask, no clock offsets): what crossing nodes costs.
The two alternate pair by pair (which goes first alternates), the first pair a warm-up that
is not counted. Per run: the median skew over its phases (max start - min start, in the
coordinator's timebase after offset correction) and its turnaround (phases per second from
the first T0 to the last).

Goals (absolute, gated on the median over pairs; the local engine's figure and the median of
the paired ratios cluster / local printed beside each, for information):
  - null phases: median skew <= 100 us after offset correction, shifted node included
  - phase turnaround across 4 nodes: >= 20 null phases per second
  - agent memory: one Dask worker per node plus <= 20 MB (PSS) per slot
Exit status 1 when a goal is missed, 2 when namespaces or libfaketime are not available.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import harness
from harness import ENV, absolute, alternate, info

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from cluster_lab import DaskLab, faketime_lib  # noqa: E402
from netns import netns_available  # noqa: E402

NODES, SLOTS = 4, 2


def figures(rows: list[dict]) -> dict:
    """Median skew (us), phases per second, and the clock offsets and error bound seen."""
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        sys.exit(f"null phase failed: {bad[0]['error']}")
    skews = [(max(r["start_ns"] for r in g) - min(r["start_ns"] for r in g)) / 1e3
             for g in harness.phases(rows).values()]
    t0s = sorted({r["t0_ns"] for r in rows})
    rate = (len(t0s) - 1) / ((t0s[-1] - t0s[0]) / 1e9) if len(t0s) > 1 else 0.0
    return {"skew": statistics.median(skews), "rate": rate,
            "offsets": {r["node"]: r["metrics"].get("clock_offset_ns", 0) for r in rows},
            "error": max(r["metrics"].get("clock_error_ns", 0) for r in rows)}


def pss_mb(procs: list[psutil.Process]) -> list[float]:
    return [p.memory_full_info().pss / 2**20 for p in procs]


def memory(lab: DaskLab) -> tuple[list[float], list[float], list[float]]:
    """PSS (MB) of the Dask workers, the agents and the slots while a pool is up (a long
    command phase keeps it alive)."""
    d = tempfile.mkdtemp(prefix="mb-bench-")
    with open(os.path.join(d, "p.toml"), "w") as f:
        f.write(f'[placement]\nworkers = {NODES * SLOTS}\n[[task]]\nname = "nap"\n'
                'command = ["sleep", "4"]\n')
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", os.path.join(d, "p.toml"),
                             "-o", d, "-q", "--scheduler", lab.scheduler], env=ENV)
    time.sleep(2.5)
    workers = [psutil.Process(p.pid) for p in lab.workers.values()]
    agents = [c for w in workers for c in w.children()
              if "manybench.node.server" in " ".join(c.cmdline())]
    slots = [s for ag in agents for s in ag.children() if s.name() != "sleep"]
    out = pss_mb(workers), pss_mb(agents), pss_mb(slots)
    proc.wait()
    if len(slots) != NODES * SLOTS:
        sys.exit(f"expected {NODES * SLOTS} slot processes, found {len(slots)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="counted pairs")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    a = ap.parse_args()
    can, why = netns_available()
    if not can or faketime_lib() is None:
        print(f"cannot build the namespace cluster here: "
              f"{why if not can else 'libfaketime missing (Debian package faketime)'}",
              file=sys.stderr)
        return 2
    plan = (f'repeat = {a.phases}\n[placement]\nworkers = {NODES * SLOTS}\n'
            '[[task]]\nname = "sync"\nkernel = "null"\n')

    def show(rnd: int, got: dict) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {what}: " + "   ".join(f"{n}: median skew {g['skew']:.1f} us, "
                                         f"{g['rate']:.1f} phases/s" for n, g in got.items()),
              flush=True)
    with DaskLab(NODES, slots=SLOTS, shifted=3) as lab:
        runs = alternate({"cluster": lambda: figures(harness.run_plan(plan, "--scheduler",
                                                                      lab.scheduler)),
                          "local engine": lambda: figures(harness.run_plan(plan))},
                         a.rounds, a.warmup, show)
        w_pss, a_pss, s_pss = memory(lab)
    cl, lo = runs["cluster"], runs["local engine"]
    last = cl[-1]
    print("clock offsets " + ", ".join(f"{n} {o / 1e3:+.1f} us"
                                       for n, o in sorted(last["offsets"].items()))
          + f" (n3 shifted by libfaketime); error bound <= {last['error'] / 1e3:.1f} us")
    skew = [r["skew"] for r in cl]
    ok = absolute(f"{NODES} nodes x {SLOTS} slots: median skew, shifted node included (median "
                  "over pairs)", statistics.median(skew), 100, "us",
                  beside=f"local engine {statistics.median(r['skew'] for r in lo):.1f} us")
    info("  skew cluster / local engine", skew, [r["skew"] for r in lo], "us", "lower")
    rate = [r["rate"] for r in cl]
    ok &= absolute(f"turnaround across {NODES} nodes (median over pairs)",
                   statistics.median(rate), 20, "phases/s", direction="higher",
                   beside=f"local engine {statistics.median(r['rate'] for r in lo):.1f} phases/s")
    info("  turnaround cluster / local engine", rate, [r["rate"] for r in lo], "phases/s")
    ok &= absolute("slot PSS, max", max(s_pss), 20, "MB",
                   beside=f"Dask worker {statistics.median(w_pss):.1f} MB per node; agent "
                          f"process {statistics.median(a_pss):.1f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
