#!/usr/bin/env python3
"""How long a report of a big run takes: 10,000 phases.

  python benchmarks/bench_report.py [--phases 10000] [--rounds 3] [--keep DIR]

The results.db is synthesized through the store API (results/store.py, the path a real run
writes by), shaped as a long sweep: 80% null phases at 1, 2, 4 and 8 slots, 20% io.write
phases at two block sizes with latency histograms, 3.75 records a phase on average. Then,
alternated with its peer pair by pair (the first pair a warm-up, not counted):
  - manybench: `python -m manybench report DIR` at 80 columns, the whole command
  - peer: `python -m manybench --version` (interpreter start and import), so the time the
    report itself adds is visible beside what any command pays
The HTML report with its figures (`report DIR --html FILE`) is timed once, beside, ungated.

Goal (issue 10): a report of a 10,000-phase run renders in <= 5 s (median over rounds).
Exit status 1 when it is missed.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import harness as H
from manybench.model import Phase, Plan, TaskSpec
from manybench.record import Record
from manybench.results.contract import StoredNode
from manybench.results.store import Store

T = 1_700_000_000_000_000_000
S = 1_000_000_000


def synthesize(directory: str, phases: int) -> None:
    """A run of `phases` phases: null sweeps and io.write points, as a long plan gives."""
    null = TaskSpec("sync", "null", {})
    wr = TaskSpec("write", "io.write", {"block": ["64KiB", "1MiB"]})
    st = Store(directory)
    st.begin_run("big", Plan(name="big", tasks=[null, wr], raw={}), ["bench"],
                 {"hostname": "n1", "logical_cpus": 8})
    st.write_nodes("big", [StoredNode("big", "n1", "127.0.0.1", 8, 8)])
    for i in range(phases):
        t0 = T + i * S
        w = (1, 2, 4, 8)[i % 4]
        if i % 5:
            spec, kname, params, point = null, "null", {}, f"sync-{w}"
            recs = [Record(run="big", phase=i, task="sync", kernel="null", variant="", rep=i,
                           workers=w, node="n1", slot=s, cpu=s, t0_ns=t0,
                           start_ns=t0 + 500 + 37 * ((i * 7 + s) % 11),
                           end_ns=t0 + 900 + 53 * ((i * 3 + s) % 13)) for s in range(w)]
        else:
            block = 65536 if (i // 5) % 2 else 1 << 20
            spec, kname, params = wr, "io.write", {"block": block, "size": 64 << 20}
            point = f"write-{w}-{block}"
            recs = [Record(run="big", phase=i, task="write", kernel="io.write", variant="",
                           rep=i, workers=w, node="n1", slot=s, cpu=s, t0_ns=t0,
                           start_ns=t0 + 1000 * s, end_ns=t0 + S // 10 + 997 * ((i + s) % 17),
                           elapsed_s=0.1, ops=(64 << 20) // block, bytes=64 << 20,
                           params=params, metrics={"fsync_us": 900.0 + s},
                           hist={100 + (i + s) % 5: 500, 140: 20}) for s in range(w)]
        st.write_phase("big", Phase(i, spec, kname, "", i, w, "spread", "core", params, point),
                       t0, recs)
    st.end_run("big", "finished")
    st.close()


CPU: dict[str, list[float]] = {}     # per command, the cpu time (user + sys) of each run


def timed(argv: list[str]) -> float:
    """Wall time of the command; its cpu time is kept in CPU (load on a shared machine
    stretches the wall time, not the cpu time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run(argv, env={**H.ENV, "COLUMNS": "80"}, capture_output=True, text=True)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(argv[3], []).append(after.ru_utime + after.ru_stime - before.ru_utime
                                       - before.ru_stime)
    if res.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed: {res.stderr[-2000:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phases", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="build (or reuse) the results directory here")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-report-")
    directory = args.keep or os.path.join(tmp, "res")
    try:
        if not os.path.exists(os.path.join(directory, "results.db")):
            t = time.perf_counter()
            synthesize(directory, args.phases)
            print(f"synthesized {args.phases} phases in {time.perf_counter() - t:.1f} s "
                  f"({os.path.getsize(os.path.join(directory, 'results.db')) >> 20} MiB)")
        py = [sys.executable, "-m", "manybench"]
        rounds = H.alternate({"manybench": lambda: timed(py + ["report", directory]),
                              "--version": lambda: timed(py + ["--version"])},
                             rounds=args.rounds, show=H.show_round("", "s"))
        html = os.path.join(tmp, "report.html")
        took = timed(py + ["report", directory, "--html", html])
        print(f"report --html (terminal report, then the page with its figures): {took:.2f} s, "
              f"{os.path.getsize(html) >> 10} KiB (not gated)")
        ours, peer = rounds["manybench"], rounds["--version"]
        med = sorted(ours)[(len(ours) - 1) // 2]
        cpu = sorted(CPU["report"][1:args.rounds + 1])[(args.rounds - 1) // 2]
        print(f"cpu time of the report command (user + sys), median: {cpu:.2f} s; of "
              f"--version: {sorted(CPU['--version'])[(len(CPU['--version']) - 1) // 2]:.2f} s")
        ok = H.absolute(f"report of a {args.phases}-phase run", med, 5.0, "s",
                        beside=f"`manybench --version` {sorted(peer)[(len(peer) - 1) // 2]:.2f} s")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
