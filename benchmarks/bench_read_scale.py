#!/usr/bin/env python3
"""Reading a large run: what `report`, `report --json`, a plain `run`'s end (its checks and
the report it prints), `history` and `compare` hold and spend, at N records and at 4N,
against the tree before issue 30 (which read every record).

  python benchmarks/bench_read_scale.py                     # 1,000 x 64 x 16 phases, then x4
  python benchmarks/bench_read_scale.py --nodes 100 --phases 4 --scale 2     # a quick look

Each run is one plain `manybench run plan.toml --simulate NxS` (no -q: it prints the report)
of null phases with every slot a worker. Its coordinator is sampled every 20 ms (psutil: its
own RSS and cpu time, not its nodes'): the peak RSS over the run, and the end's cpu time: from
the last phase stored to the process gone (the end's checks, the printed report). Then each
reader runs once on the stored run, measured by wait4 (peak RSS, user + system cpu):
`report`, `report --json`, `history DIR`, `compare DIR DIR:RUN` (the run against itself: two
runs' worth). At N records both trees run; at scale x N this tree only (the tree before would
hold every record: ~2 KB each, 8 GB at 4 M), unless --peer-at-scale.

Goals (issue 30): peak RSS <= 300 MB for each at N; at scale x N <= 1.1 x this tree's own at
N; `report` cpu <= 2 s at N (1.02 M records); the end's cpu per 64,000 records <= 0.1 s.
Ratios against the tree before are printed for information. Exit status 1 when a goal is
missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import psutil

from harness import StoredPhases, absolute, machine, write_null_plan
from peer_tree import ROOT, before_tree, drop_tree, env_of

BEFORE = "int29"         # the tree before issue 30
RSS_MB, GROWTH, REPORT_S, END_S = 300.0, 1.1, 2.0, 0.1
READERS = ("report", "report --json", "history", "compare")


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def plain_run(tree: str, d: str, nodes: int, slots: int, phases: int) -> dict:
    """A plain run (it prints the report): the coordinator's peak RSS, the end's cpu."""
    plan = write_null_plan(d, nodes * slots, phases)
    out = open(os.path.join(d, "stdout.txt"), "w")
    run = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d,
                            "--simulate", f"{nodes}x{slots}"], env=env_of(tree), stdout=out,
                           stderr=subprocess.STDOUT)
    proc, stored = psutil.Process(run.pid), StoredPhases(os.path.join(d, "results.db"))
    peak, cpu, at_last = 0, 0.0, None
    while run.poll() is None:
        try:
            peak = max(peak, proc.memory_info().rss)
            cpu = _cpu(proc)
        except psutil.Error:
            break
        if at_last is None and stored.count() >= phases:
            at_last = cpu
        time.sleep(0.02)
    run.wait()
    out.close()
    stored.close()
    if run.returncode != 0 or at_last is None:
        with open(os.path.join(d, "stdout.txt")) as f:
            raise RuntimeError(f"the run failed (exit {run.returncode}):\n{f.read()[-2000:]}")
    return {"rss_mb": peak / 2**20, "end_cpu_s": cpu - at_last}


def reader(tree: str, d: str, what: str) -> dict:
    """One reader on the stored run: its peak RSS and cpu (wait4)."""
    con = sqlite3.connect(f"file:{os.path.join(d, 'results.db')}?mode=ro", uri=True)
    run_id = con.execute("SELECT id FROM runs").fetchone()[0]
    con.close()
    args = {"report": ["report", d], "report --json": ["report", d, "--json"],
            "history": ["history", d], "compare": ["compare", d, f"{d}:{run_id}"]}[what]
    p = subprocess.Popen([sys.executable, "-m", "manybench", *args], env=env_of(tree),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{what} failed: {p.stderr.read().decode()[-2000:]}")
    return {"rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime}


def measure(tree: str, nodes: int, slots: int, phases: int) -> dict:
    d = tempfile.mkdtemp(prefix="mb-read-")
    try:
        got = {"run": plain_run(tree, d, nodes, slots, phases)}
        for what in READERS:
            got[what] = reader(tree, d, what)
        return got
    finally:
        shutil.rmtree(d, ignore_errors=True)


def show(label: str, got: dict, records: int) -> None:
    r = got["run"]
    print(f"  {label}: plain run peak {r['rss_mb']:.0f} MB, its end {r['end_cpu_s']:.2f} s cpu "
          f"({r['end_cpu_s'] / (records / 64_000):.3f} s per 64,000 records); "
          + "; ".join(f"{w} {got[w]['rss_mb']:.0f} MB {got[w]['cpu_s']:.2f} s" for w in READERS),
          flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--phases", type=int, default=16, help="N records = nodes x slots x this")
    ap.add_argument("--scale", type=int, default=4, help="then this many times the phases")
    ap.add_argument("--before", default=BEFORE, help="git ref of the peer tree ('' = none)")
    ap.add_argument("--peer-at-scale", action="store_true",
                    help="the tree before at scale x N too (it holds every record)")
    a = ap.parse_args()
    print(machine(), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus", flush=True)
    n = a.nodes * a.slots * a.phases
    print(f"reading a run of {a.nodes} simulated nodes x {a.slots} slots x {a.phases} null "
          f"phases ({n:,} records), then x {a.scale} ({a.scale * n:,})", flush=True)
    made = before_tree(a.before) if a.before else None
    try:
        ours = measure(ROOT, a.nodes, a.slots, a.phases)
        show(f"this tree, {n:,}", ours, n)
        peer = measure(made, a.nodes, a.slots, a.phases) if made else None
        if peer:
            show(f"before ({a.before}), {n:,}", peer, n)
        big = measure(ROOT, a.nodes, a.slots, a.phases * a.scale)
        show(f"this tree, {a.scale * n:,}", big, a.scale * n)
        if made and a.peer_at_scale:
            show(f"before, {a.scale * n:,}", measure(made, a.nodes, a.slots,
                                                      a.phases * a.scale), a.scale * n)
    finally:
        if made:
            drop_tree(made)
    print(f"load average {os.getloadavg()[0]:.1f} after", flush=True)
    ok = True
    for what in ("run",) + READERS:
        name = "a plain run" if what == "run" else what
        rss, before = ours[what]["rss_mb"], peer[what]["rss_mb"] if peer else None
        ok &= absolute(f"{name}: peak RSS at {n:,} records", rss, RSS_MB, "MB",
                       beside=f"before {before:.0f} MB, this tree / before "
                              f"{rss / before:.3f}" if before else "")
        ok &= absolute(f"{name}: peak RSS at {a.scale * n:,} / at {n:,}",
                       big[what]["rss_mb"] / rss, GROWTH, "x")
    for what in READERS:
        cpu, before = ours[what]["cpu_s"], peer[what]["cpu_s"] if peer else None
        line = f"before {before:.2f} s, this tree / before {cpu / before:.3f}" if before else ""
        if what == "report":
            ok &= absolute(f"report: cpu at {n:,} records", cpu, REPORT_S, "s", beside=line)
        else:
            print(f"{what}: cpu at {n:,} records: {cpu:.2f} s; {line}", flush=True)
    per = ours["run"]["end_cpu_s"] / (n / 64_000)
    before = (f"before {peer['run']['end_cpu_s'] / (n / 64_000):.3f} s" if peer else "")
    ok &= absolute("the run's end: cpu per 64,000 records", per, END_S, "s", beside=before)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
