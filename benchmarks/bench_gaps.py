#!/usr/bin/env python3
"""How much longer than usual nodes keep the coordinator waiting (run/gaps.py), unattacked and
with a node stopped: the measurement MARGIN_S was chosen from.

  python benchmarks/bench_gaps.py [--phases 300] [--stop 1.0] [--dask]

Each case runs --phases phases through `python -m manybench run`, with run/gaps.py's
Gaps.judge wrapped to log, before it judges, every node's go and prepare waits and how much
longer than its usual each node kept the coordinator waiting (Gaps.overs, exact go waits):
  - null phases (no prepare round) and `true` command phases (a prepare round each);
  - on the local engine (2 slots), and with --dask (root, network namespaces: tests/
    cluster_lab.py) on two Dask namespace nodes x 1 slot;
  - idle, and with two busy loops of this script's own (one per cpu of a 2-cpu machine);
  - and the peer, the signal to tell from that noise: idle, the node (local: its slots;
    Dask: n2's agent) SIGSTOPped for --stop s once, after 30 phases.
Printed per case: go and prepare waits and the excess over usual (median, p99, max), and the
largest excess's node. Goals: every unattacked case's largest excess <= MARGIN_S / 2 (room
for a busier machine) and the stopped node's >= --stop - MARGIN_S / 2 (a --stop s stop is
flagged with room), the stopped node named. Exit status 1 when a goal is missed, 2 when
--dask cannot make namespaces.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import psutil

import harness
from harness import ENV, absolute, machine

from manybench.analysis.stats import nearest_rank
from manybench.run.gaps import MARGIN_S

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

# the run, with Gaps.judge wrapped to log what it is given and every node's excess
RUNNER = """
import json, sys
from manybench.run import gaps as G
log = open(sys.argv.pop(1), "a")
judge = G.Gaps.judge
def logged(self, phase, t0, polled, elapsed, waited, answered):
    go = G.go_waits(t0, polled, elapsed, waited, answered, exact_s=0.0)
    overs = self.overs(phase, list(go), go, waited)
    log.write(json.dumps({"phase": phase.index, "go": go, "prepare": waited,
                          "over": {n: o for n, (o, _) in overs.items()}}) + "\\n")
    log.flush()
    return judge(self, phase, t0, polled, elapsed, waited, answered)
G.Gaps.judge = logged
from manybench.entry import main
main()
"""

KINDS = {"null": 'kernel = "null"', "command": 'command = ["true"]'}


def plan(d: str, kind: str, phases: int, workers: int) -> str:
    path = os.path.join(d, f"{kind}.toml")
    with open(path, "w") as f:
        f.write(f'name = "gaps"\nrepeat = {phases}\nnoise = 0\n[placement]\n'
                f'workers = {workers}\n[[task]]\nname = "{kind}"\n{KINDS[kind]}\n')
    return path


def stored(out: str) -> int:
    try:
        with sqlite3.connect(os.path.join(out, "results.db")) as db:
            return db.execute("select count(*) from phases").fetchone()[0]
    except sqlite3.Error:
        return 0


def run(kind: str, phases: int, workers: int, args: list[str], stop=None) -> list[dict]:
    """One run's log; stop: (seconds, a function of the run's process giving the processes
    to SIGSTOP once 30 phases are stored)."""
    d = tempfile.mkdtemp(prefix="mb-gaps-")
    log, out = os.path.join(d, "log.jsonl"), os.path.join(d, "res")
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, log, "run",
                             plan(d, kind, phases, workers), "-o", out, "-q", *args], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if stop is not None:
        seconds, which = stop
        while stored(out) < 30 and proc.poll() is None:
            time.sleep(0.05)
        procs = which(proc)
        for p in procs:
            p.suspend()
        time.sleep(seconds)          # the stop itself
        for p in procs:
            p.resume()
    _, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"the run failed ({proc.returncode}): {err[-2000:]}")
    with open(log) as f:
        return [json.loads(line) for line in f]


def dist(xs: list[float]) -> str:
    if not xs:
        return "-"
    return "/".join(f"{nearest_rank(xs, q) * 1e3:.1f}" for q in (50, 99, 100))


def show(label: str, rows: list[dict]) -> tuple[float, str]:
    """Print a case's line; its largest excess and that node."""
    go = [v for r in rows for v in r["go"].values()]
    prep = [v for r in rows for v in r["prepare"].values()]
    overs = [(v, n) for r in rows for n, v in r["over"].items()]
    worst = max(overs, default=(0.0, ""))
    print(f"{label:<34} go ms {dist(go):<20} prepare ms {dist(prep):<20} "
          f"over usual ms {dist([v for v, _ in overs]):<22} (largest: {worst[1]})", flush=True)
    return worst


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def cases(engine: str, phases: int, stop_s: float, args: list[str], workers: int, stopped
          ) -> tuple[list[float], tuple[float, str]]:
    """Every unattacked case's largest excess, and the stopped case's (excess, node)."""
    quiet = []
    for kind in KINDS:
        quiet.append(show(f"{engine} {kind}, idle", run(kind, phases, workers, args))[0])
        loops = busy(2)
        try:
            quiet.append(show(f"{engine} {kind}, 2 busy loops",
                              run(kind, phases, workers, args))[0])
        finally:
            for p in loops:
                p.kill()
                p.wait()
    rows = run("null", phases, workers, args, stop=(stop_s, stopped))
    return quiet, show(f"{engine} null, stopped {stop_s:g} s", rows)


def agent_of(lab, node: str):
    def find(_proc: subprocess.Popen) -> list[psutil.Process]:
        worker = psutil.Process(lab.workers[node].pid)
        return [p for p in worker.children(recursive=True)
                if "manybench.node.server" in " ".join(p.cmdline())]
    return find


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=300)
    ap.add_argument("--stop", type=float, default=1.0)
    ap.add_argument("--dask", action="store_true")
    a = ap.parse_args()
    print(machine(), flush=True)
    print(f"MARGIN_S {MARGIN_S} s; {a.phases} phases a case; go / prepare / over usual: "
          "median/p99/max", flush=True)
    quiet, stops = [], []
    q, s = cases("local", a.phases, a.stop, [], 2,
                 lambda proc: psutil.Process(proc.pid).children())
    quiet += q
    stops.append((s, None))
    if a.dask:
        from cluster_lab import DaskLab   # noqa: PLC0415
        from netns import netns_available   # noqa: PLC0415
        if not netns_available():
            print("--dask: network namespaces are not available here (root, iproute2)")
            return 2
        with DaskLab(2, slots=1) as lab:
            q, s = cases("dask x2", a.phases, a.stop, ["--scheduler", lab.scheduler], 2,
                         agent_of(lab, "n2"))
        quiet += q
        stops.append((s, "n2"))
    ok = absolute("largest excess over usual, unattacked", max(quiet), MARGIN_S / 2, "s")
    for (over, node), want in stops:
        ok &= absolute(f"stopped node's excess ({node or 'the local node'})", over,
                       a.stop - MARGIN_S / 2, "s", direction="higher")
        if want is not None and node != want:
            print(f"the largest excess was node {node}'s, not the stopped {want}'s: FAIL")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    harness.info  # noqa: B018 (harness sets the path and the environment)
    sys.exit(main())
