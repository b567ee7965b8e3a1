#!/usr/bin/env python3
"""Synchronized-start figures of the core, each against a peer measured the same way.

  python benchmarks/bench_sync.py [--phases 1000] [--big 56] [--rounds 3]

Every round runs manybench and its peers back to back (which goes first alternates); the
peers do exactly what a null phase does: N processes pinned as manybench's slots are
(run/placement.py for that worker count), released together, each stamping start and end
around nothing.
  - C floor (peers/start_floor.c, built with the package's compiler and flags): sleep to an
    absolute T0, spin the last stretch only where manybench's slots would (a core each);
    nothing else.
  - Barrier: processes released by a multiprocessing.Barrier, as most harnesses do.
Figures and goals (issue #2), gated on the median over rounds:
  - null phases, 2 slots: median skew <= 20 us and p99 <= 500 us (C floor beside it)
  - null sync overhead (last end - first start) with 56 slots on this machine: median
    <= 5 ms (SMTEF: 50 ms at 56 workers), and the median of the paired ratios to the Barrier
    peer's sync overhead (same processes, same pinning) <= 1.0 (C floor beside it)
  - turnaround: 1,000 null phases with 2 slots in <= 5 s from first T0 to last end
  - slot memory: <= 20 MB PSS each (beside a bare Python interpreter's PSS); a 56-slot
    one-phase run <= 3 s in all (beside `python -m manybench --version`)
Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import harness
from harness import SRC, Goal, verdict

FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "start_floor.c")
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
US, MS = 1e3, 1e6


def pct(values: list[float], q: float) -> float:
    """Nearest rank, as manybench's reports."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-len(s) * q // 100) - 1))]


def run_plan(text: str, *args: str) -> tuple[dict[int, list[dict]], float]:
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(text)
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q", *args],
                   check=True, env=ENV)
    wall = time.monotonic() - t
    out = subprocess.run([sys.executable, "-m", "manybench", "export", d, "--format", "json"],
                         check=True, capture_output=True, text=True, env=ENV).stdout
    phases: dict[int, list[dict]] = {}
    for r in json.loads(out):
        phases.setdefault(r["phase"], []).append(r)
    return phases, wall


def null_plan(workers: int, repeat: int) -> str:
    return (f'repeat = {repeat}\n[placement]\nworkers = {workers}\n'
            '[[task]]\nname = "sync"\nkernel = "null"\n')


def manybench(workers: int, repeat: int) -> dict:
    phases, wall = run_plan(null_plan(workers, repeat))
    rows = [r for g in phases.values() for r in g]
    return {"skew": [(max(r["start_ns"] for r in g) - min(r["start_ns"] for r in g))
                     for g in phases.values()],
            "overhead": [(max(r["end_ns"] for r in g) - min(r["start_ns"] for r in g))
                         for g in phases.values()],
            "span_s": (max(r["end_ns"] for r in rows) - min(r["t0_ns"] for r in rows)) / 1e9,
            "wall_s": wall}


def floor(exe: str, workers: int, rounds: int) -> dict:
    """The C floor with the slots' pinning and spin for `workers` slots on this machine."""
    places = harness.slot_places(workers)
    spin = 300_000 if all(p.spin for p in places) else 0
    gap = 3_000_000 + 200_000 * workers
    out = subprocess.run([exe, str(rounds), str(spin), str(gap),
                          *(str(p.cpu) for p in places)],
                         check=True, capture_output=True, text=True).stdout
    nums = [int(x) for x in out.split()]
    pairs = list(zip(nums[0::2], nums[1::2]))
    return {"skew": [p[0] for p in pairs], "overhead": [p[1] for p in pairs]}


def _barrier_child(barrier, q, affinity: tuple[int, ...], rounds: int) -> None:
    os.sched_setaffinity(0, affinity)
    for _ in range(rounds):
        barrier.wait()
        start = time.time_ns()
        end = time.time_ns()
        q.put((start, end))


def barrier(workers: int, rounds: int) -> dict:
    """Processes pinned as the slots, released by a multiprocessing.Barrier each round."""
    b, q = mp.Barrier(workers), mp.Queue()
    procs = [mp.Process(target=_barrier_child, args=(b, q, aff, rounds))
             for aff in harness.slot_affinity(workers)]
    for p in procs:
        p.start()
    stamps = sorted(q.get() for _ in range(workers * rounds))
    for p in procs:
        p.join()
    groups = [stamps[i:i + workers] for i in range(0, len(stamps), workers)]
    return {"skew": [max(s for s, _ in g) - min(s for s, _ in g) for g in groups],
            "overhead": [max(e for _, e in g) - min(s for s, _ in g) for g in groups]}


def slot_pss_mb(n: int) -> list[float]:
    """PSS of each slot of a live run (a long command phase keeps the pool up)."""
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(f'[placement]\nworkers = {n}\n[[task]]\nname = "nap"\ncommand = ["sleep", "3"]\n')
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q"],
                            env=ENV)
    time.sleep(1.5)
    slots = [c for c in psutil.Process(proc.pid).children() if c.name() != "sleep"]
    pss = [c.memory_full_info().pss / 2**20 for c in slots]
    proc.wait()
    return pss


def bare_python_pss_mb() -> float:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    time.sleep(0.5)
    pss = psutil.Process(p.pid).memory_full_info().pss / 2**20
    p.wait()
    return pss


def absolute(name: str, value: float, limit: float, unit: str, beside: str = "") -> bool:
    ok = value <= limit
    print(f"{name}: {value:,.3g} {unit} (goal <= {limit:g} {unit}) {'PASS' if ok else 'FAIL'}"
          + (f"; {beside}" if beside else ""), flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=1000)
    ap.add_argument("--big", type=int, default=56)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="mb-bench-floor-")
    exe = os.path.join(d, "start_floor")
    harness.compile_c(FLOOR, exe)
    small = {"manybench": [], "floor": []}
    big = {"manybench": [], "floor": [], "barrier": []}
    for rnd in range(a.rounds):
        order = [0, 1] if rnd % 2 == 0 else [1, 0]
        for i in order:
            if i == 0:
                small["manybench"].append(manybench(2, a.phases))
                big["manybench"].append(manybench(a.big, 20))
            else:
                small["floor"].append(floor(exe, 2, a.phases))
                big["floor"].append(floor(exe, a.big, 20))
                big["barrier"].append(barrier(a.big, 20))
        m, f = small["manybench"][-1], small["floor"][-1]
        print(f"  round {rnd + 1}: 2 slots skew median {statistics.median(m['skew']) / US:.1f} "
              f"us (floor {statistics.median(f['skew']) / US:.1f}); {a.big} slots sync overhead "
              f"median {statistics.median(big['manybench'][-1]['overhead']) / MS:.3f} ms (floor "
              f"{statistics.median(big['floor'][-1]['overhead']) / MS:.3f}, Barrier "
              f"{statistics.median(big['barrier'][-1]['overhead']) / MS:.3f})", flush=True)
    med = lambda runs, key: [statistics.median(r[key]) for r in runs]   # noqa: E731
    p99 = lambda runs, key: [pct(r[key], 99) for r in runs]               # noqa: E731
    ok = absolute("null, 2 slots: skew median (median over rounds)",
                  statistics.median(med(small["manybench"], "skew")) / US, 20, "us",
                  f"C floor {statistics.median(med(small['floor'], 'skew')) / US:.2f} us")
    ok &= absolute("null, 2 slots: skew p99 (median over rounds)",
                   statistics.median(p99(small["manybench"], "skew")) / US, 500, "us",
                   f"C floor {statistics.median(p99(small['floor'], 'skew')) / US:.2f} us")
    mine = med(big["manybench"], "overhead")
    ok &= absolute(f"null, {a.big} slots on {os.cpu_count()} cpus: sync overhead median",
                   statistics.median(mine) / MS, 5, "ms",
                   f"C floor {statistics.median(med(big['floor'], 'overhead')) / MS:.3f} ms; "
                   "SMTEF 50 ms at 56 workers")
    ok &= verdict(Goal(f"{a.big}-slot sync overhead / Barrier release", 1.0,
                       higher_is_better=False), mine, med(big["barrier"], "overhead"), "ns")
    span = statistics.median(r["span_s"] for r in small["manybench"]) * 1000 / a.phases
    ok &= absolute("turnaround of 1,000 null phases, 2 slots (first T0 to last end)", span, 5,
                   "s", f"whole command {statistics.median(r['wall_s'] for r in small['manybench']):.2f} s")
    _, wall = run_plan(null_plan(a.big, 1))
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "manybench", "--version"], check=True, env=ENV,
                   capture_output=True)
    bare = time.monotonic() - t
    ok &= absolute(f"{a.big}-slot one-phase run, whole command", wall, 3, "s",
                   f"`manybench --version` {bare:.2f} s")
    pss = slot_pss_mb(a.big)
    ok &= absolute(f"slot PSS with {a.big} slots, max", max(pss), 20, "MB",
                   f"median {statistics.median(pss):.1f} MB; a bare Python interpreter "
                   f"{bare_python_pss_mb():.1f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
