#!/usr/bin/env python3
"""The coordinator at 100, 300 and 1,000 nodes x 64 slots, against a simulated cluster
(issue 21): CPU per phase, per record, dispatch, memory over the phases.

  python benchmarks/bench_sim.py                           # 100,300,1000 x 64, 100 phases
  python benchmarks/bench_sim.py --nodes 1000 --phases 40 --fanout off   # no relays

Each size is one `manybench run plan.toml -q --simulate NxS[,opts]` of `--phases` null
phases with every slot a worker: the real coordinator, engine channels, store (every record
committed, one transaction per phase) against N simulated nodes (node/simulated.py: real
sockets, synthetic results) in a few processes of this machine. While it runs, the
coordinator's CPU (user + system, /proc) and RSS are read when a fifth and nine tenths of
the phases are stored: CPU per phase = the CPU between the readings / the phases stored
between them (start-up outside it); the RSS is read at half way too, to show where it grew
(for information); then the run is stopped as Ctrl-C stops it (its end,
the quality checks over every record, is not the phase loop's cost: docs/scale.md).
`--fanout N|auto|off` is passed to
the run (relays, engines/relays.py: automatic above 128 nodes, as without it; each relay
runs the real relay code in a process of its own, node/simulated_relay.py); the relays
formed are counted from the nodes' inventories. Dispatch per phase, from the results:
the last slot armed (the go arrived at its node, coordinator's clock) - the go sent
(phases.go_ns); the simulated nodes' own CPU shares the machine's 2 cpus and counts in
dispatch, not in the coordinator's CPU.

Peer: none runs the same work (no tool drives 1,000 nodes); the figures are the issue's
absolute goals, printed with the curve over the sizes so its slope shows. Goals at 1,000 x
64: coordinator CPU per phase <= 0.5 s including the commit of 64,000 records; dispatch
<= 100 ms with relays (median over phases); RSS flat (growth between the readings <= 5%
of the RSS, or <= 20 MB).
Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import psutil

from harness import StoredPhases, absolute, machine, pct, write_null_plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Watch(threading.Thread):
    """The coordinator's CPU and RSS when a fifth, half and nine tenths of the phases are
    stored (the half: where between the two the RSS grew, for information)."""

    def __init__(self, run: subprocess.Popen, db: str, phases: int) -> None:
        super().__init__(daemon=True)
        self.run_, self.db = run, db
        self.marks = [max(3, phases // 5), max(4, phases // 2), phases * 9 // 10]
        self.readings: list[tuple[float, float, int]] = []   # (phases, cpu s, rss)

    def run(self) -> None:
        stored, proc = StoredPhases(self.db), psutil.Process(self.run_.pid)
        while self.marks and self.run_.poll() is None:
            n = stored.count()
            if n >= self.marks[0]:
                t = proc.cpu_times()
                rss = proc.memory_info().rss
                self.readings.append(((n + stored.count()) / 2, t.user + t.system, rss))
                self.marks.pop(0)
            time.sleep(0.02)
        stored.close()


def measure(nodes: int, slots: int, phases: int, options: str, fanout: str | None) -> dict:
    d = tempfile.mkdtemp(prefix="mb-sim-")
    try:
        plan = write_null_plan(d, nodes * slots, phases)
        spec = f"{nodes}x{slots}" + (f",{options}" if options else "")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
        # stderr to a file: a pipe read only at the end fills with the run's warnings and
        # blocks the coordinator mid-run
        errf = open(os.path.join(d, "stderr.txt"), "w+")
        run = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q",
                                "--simulate", spec, *(["--fanout", fanout] if fanout else [])],
                               env=env, stderr=errf, stdout=subprocess.DEVNULL, text=True)
        watch = Watch(run, os.path.join(d, "results.db"), phases)
        watch.start()
        watch.join()
        # the run's end (its quality checks read every record) is not the phase loop's
        # cost: stopped as Ctrl-C stops it once both readings are taken (docs/scale.md)
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
        run.wait()
        errf.seek(0)
        err = errf.read()
        errf.close()
        if run.returncode not in (0, 130):
            raise RuntimeError(f"the run failed (exit {run.returncode}):\n{err[-2000:]}")
        if len(watch.readings) < 3:
            raise RuntimeError("the run ended before the readings: give it more --phases")
        (n0, c0, m0), (_, _, mid), (n1, c1, m1) = watch.readings
        con = sqlite3.connect(os.path.join(d, "results.db"))
        dispatch = [(a - g) / 1e6 for a, g in con.execute(
            "SELECT MAX(json_extract(r.extra, '$.armed_ns')), p.go_ns FROM records r "
            "JOIN phases p ON p.idx = r.phase AND p.run = r.run "
            "GROUP BY r.phase") if a and g]
        cycle = [t for (t,) in con.execute("SELECT go_ns FROM phases WHERE go_ns IS NOT NULL "
                                           "ORDER BY go_ns")]
        relays = con.execute("SELECT COUNT(*) FROM nodes "
                             "WHERE json_extract(inventory, '$.relay_for') IS NOT NULL"
                             ).fetchone()[0]
        con.close()
        cpu = (c1 - c0) / (n1 - n0)
        return {"cpu_s": cpu, "per_record_us": cpu / (nodes * slots) * 1e6,
                "per_node_ms": cpu / nodes * 1e3,
                "dispatch_ms": statistics.median(dispatch), "dispatch_p99": pct(dispatch, 99),
                "cycle_s": statistics.median([b - a for a, b in zip(cycle, cycle[1:])]) / 1e9,
                "rss0": m0 / 2**20, "rss_mid": mid / 2**20, "rss1": m1 / 2**20,
                "phases": n1 - n0, "relays": relays}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="100,300,1000", help="node counts (comma-separated)")
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--phases", type=int, default=100)
    ap.add_argument("--options", default="", help="more --simulate options (delay=1ms,...)")
    ap.add_argument("--fanout", default=None, metavar="N|auto|off",
                    help="run --fanout: members per relay (default: the run's, auto)")
    args = ap.parse_args()
    print(machine(), flush=True)
    counts = [int(x) for x in args.nodes.split(",")]
    got = {}
    print(f"{'nodes':>6} {'CPU/phase':>10} {'per node':>9} {'per record':>10} "
          f"{'dispatch med/p99':>17} {'cycle':>7} {'RSS at 1/5 -> 1/2 -> 9/10':>27} {'relays':>7}",
          flush=True)
    for n in counts:
        g = got[n] = measure(n, args.slots, args.phases, args.options, args.fanout)
        print(f"{n:>6} {g['cpu_s']:>8.3f} s {g['per_node_ms']:>6.2f} ms {g['per_record_us']:>7.2f} us "
              f"{g['dispatch_ms']:>7.1f}/{g['dispatch_p99']:>6.1f} ms {g['cycle_s']:>5.2f} s "
              f"{g['rss0']:>8.0f} -> {g['rss_mid']:.0f} -> {g['rss1']:.0f} MB {g['relays']:>7}",
              flush=True)
    if len(counts) > 1:
        # the curve over the sizes: how each figure grows with the nodes (relays as formed)
        print(f"curve (fanout {args.fanout or 'auto'}): nodes -> dispatch median, coordinator "
              "CPU per phase, relays")
        for n in counts:
            print(f"  {n:>6} | {'#' * min(60, max(1, round(got[n]['dispatch_ms'] / 5))):<40} "
                  f"{got[n]['dispatch_ms']:7.1f} ms  {got[n]['cpu_s']:.3f} s  "
                  f"{got[n]['relays']} relays", flush=True)
    ok = True
    if 1000 in got:
        g = got[1000]
        curve = ", ".join(f"{n}: {got[n]['cpu_s']:.3f} s" for n in counts)
        ok &= absolute("coordinator CPU per phase at 1,000 x 64", g["cpu_s"], 0.5, "s",
                       beside=f"curve {curve}")
        dcurve = ", ".join(f"{n}: {got[n]['dispatch_ms']:.1f} ms" for n in counts)
        ok &= absolute("dispatch at 1,000 nodes (median)", g["dispatch_ms"], 100, "ms",
                       beside=f"p99 {g['dispatch_p99']:.1f} ms; options {args.options or 'none'}; "
                       f"fanout {args.fanout or 'auto'}; curve {dcurve}")
        growth = g["rss1"] - g["rss0"]
        ok &= absolute("coordinator RSS growth over the phases", growth,
                       max(20.0, 0.05 * g["rss0"]), "MB", beside=f"{g['phases']:.0f} phases; "
                       f"{g['rss1'] - g['rss_mid']:.1f} MB of it in the second half")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
