#!/usr/bin/env python3
"""Reading a long run's telemetry: what `report`, `report --plots`, `export --table telemetry`
and the checks at a run's end (run/quality.py run_checks) hold and spend on a run of many
telemetry rows, against the same run with few, and against the tree before (which held every
row as a TelemetryRow, ~1 KiB each, in each of them but export).

  python benchmarks/bench_telemetry_read.py                 # 64 nodes x 36,000 s: 2.3 M rows
  python benchmarks/bench_telemetry_read.py --seconds 3600 --before ''      # a quick look

The run: 4 io.write phases of 2 records, its telemetry written by SQLite itself (64 nodes
sampled every second over the run; a quarter of the rows between phases). Each reader runs
once, measured by wait4 (peak RSS, user + system cpu). The tree before runs at --before-rows
only (at 2.3 M rows it holds ~3 GB).

Goal: each reader's peak RSS at the big run <= 50 MB above its own at the small one (800
rows). Ratios against the tree before are printed for information. Exit status 1 when a goal
is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from harness import absolute, machine
from peer_tree import ROOT, before_tree, drop_tree, env_of

BEFORE = "int33"          # the tree before telemetry was read a batch at a time
GROWTH_MB = 50.0
NODES, PHASES, S = 64, 4, 1_000_000_000
T0 = 1_700_000_000 * S
CHECKS = ("from manybench.run.quality import run_checks; "
          "from manybench.results.store import Store; import sys; "
          "run_checks(Store(sys.argv[1], readonly=True), 'r', "
          f"{{f'n{{i}}': 4 for i in range({NODES})}})")
READERS = {"report": lambda d, out: ["-m", "manybench", "report", d],
           "report --plots": lambda d, out: ["-m", "manybench", "report", d, "--plots",
                                             os.path.join(out, "plots")],
           "export --table telemetry": lambda d, out: ["-m", "manybench", "export", d,
                                                       "--table", "telemetry", "-o",
                                                       os.path.join(out, "t.csv")],
           "the end's checks": lambda d, out: ["-c", CHECKS, d]}


def make_run(tree: str, d: str, rows: int) -> None:
    """The run, written by `tree`'s Store; its telemetry by SQLite."""
    code = f"""
from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.results.store import Store
spec = TaskSpec("w", "io.write", {{"size": "1MiB"}})
plan = Plan(name="telemetry", tasks=[spec], source='name = "telemetry"\\n',
            raw={{"name": "telemetry", "task": [{{"name": "w"}}]}})
with Store({d!r}) as st:
    st.begin_run("r", plan, [], {{"hostname": "n0"}})
    for i in range({PHASES}):
        t0 = {T0} + i * {rows // NODES // PHASES} * {S}
        recs = [Record(run="r", phase=i, task="w", kernel="io.write", variant="", rep=i,
                       workers=2, node="n0", slot=s, cpu=s, t0_ns=t0, start_ns=t0 + 10,
                       end_ns=t0 + {S}, elapsed_s=1.0, ops=4, bytes=1 << 20,
                       params={{"size": 1 << 20}}) for s in range(2)]
        st.write_phase("r", Phase(i, spec, "io.write", "", i, 2, "spread", "core",
                                  {{"size": 1 << 20}}, "w|1MiB|2", f"w {{i}}"), t0, recs)
    st.end_run("r", "finished")
"""
    subprocess.run([sys.executable, "-c", code], env=env_of(tree), check=True)
    con = sqlite3.connect(os.path.join(d, "results.db"))
    con.execute(
        "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
        "INSERT INTO telemetry SELECT 'r', 'n' || (i % ?), ? + (i / ?) * ?, 1.0, "
        "CASE WHEN i % 4 = 0 THEN NULL ELSE (i * ?) / ? END, 10.0 + (i % 7), "
        "5.0 + (i % 5), 0.5, (1 << 30) + i, 1 << 29, i * 10.0, i * 20.0, 40.0, 1e6 + i, "
        "2e6 + i FROM c", (rows - 1, NODES, T0, NODES, S, PHASES, rows))
    con.commit()
    con.close()


def reader(tree: str, d: str, what: str) -> dict:
    """One reader on the stored run: its peak RSS (MB) and cpu (s), by wait4."""
    out = tempfile.mkdtemp(prefix="mb-telread-out-")
    try:
        p = subprocess.Popen([sys.executable, *READERS[what](d, out)], env=env_of(tree),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode()
        p.stderr.close()
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise RuntimeError(f"{what} failed: {err[-2000:]}")
        return {"rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def measure(tree: str, rows: int) -> dict:
    d = tempfile.mkdtemp(prefix="mb-telread-")
    try:
        make_run(tree, d, rows)
        return {what: reader(tree, d, what) for what in READERS}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def show(label: str, got: dict) -> None:
    print(f"  {label}: " + "; ".join(f"{w} {g['rss_mb']:.0f} MB {g['cpu_s']:.2f} s"
                                     for w, g in got.items()), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=36_000,
                    help=f"rows = {NODES} nodes x this (one a second)")
    ap.add_argument("--before", default=BEFORE, help="git ref of the peer tree ('' = none)")
    ap.add_argument("--before-rows", type=int, default=300_000,
                    help="rows of the run the tree before reads (it holds every one)")
    a = ap.parse_args()
    rows, small = NODES * a.seconds, 800
    print(machine(), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus", flush=True)
    base = measure(ROOT, small)
    show(f"this tree, {small:,} rows", base)
    big = measure(ROOT, rows)
    show(f"this tree, {rows:,} rows", big)
    peer = peer_small = None
    if a.before:
        made = before_tree(a.before)
        try:
            mid = measure(ROOT, a.before_rows)
            show(f"this tree, {a.before_rows:,} rows", mid)
            peer_small, peer = measure(made, small), measure(made, a.before_rows)
            show(f"before ({a.before}), {small:,} rows", peer_small)
            show(f"before ({a.before}), {a.before_rows:,} rows", peer)
        finally:
            drop_tree(made)
    print(f"load average {os.getloadavg()[0]:.1f} after", flush=True)
    ok = True
    for what in READERS:
        growth = big[what]["rss_mb"] - base[what]["rss_mb"]
        beside = ""
        if peer:
            was = peer[what]["rss_mb"] - peer_small[what]["rss_mb"]
            now = mid[what]["rss_mb"] - base[what]["rss_mb"]
            beside = (f"at {a.before_rows:,} rows: this tree +{now:.0f} MB, before "
                      f"+{was:.0f} MB; peak this / before "
                      f"{mid[what]['rss_mb'] / peer[what]['rss_mb']:.3f}, cpu this / before "
                      f"{mid[what]['cpu_s'] / peer[what]['cpu_s']:.3f}")
        ok &= absolute(f"{what}: peak RSS at {rows:,} rows above {small:,}", growth,
                       GROWTH_MB, "MB", beside=beside)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
