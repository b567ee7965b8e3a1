"""Synchronized-start figures of the core, each against its goal and a peer in the same run.

  python benchmarks/bench_sync.py [--phases 1000] [--big 56]

Figures (issue #2 goals):
  - null phases, 2 slots on 2 cores: median skew <= 20 us, p99 <= 500 us
  - null sync overhead (last end - first start) with 56 slots: median <= 5 ms (SMTEF: 50 ms)
  - phase turnaround: 1,000 null phases with 2 slots in <= 5 s after start-up
  - slot memory: <= 20 MB PSS each; a 56-slot one-phase run <= 3 s in all
Peers, measured in the same run: the floor of this machine (peers/start_floor.c: two
pinned C processes sleeping and spinning to a common T0, nothing else), and the starts of a
multiprocessing.Barrier release (as most harnesses do) with the same number of processes.
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


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def run_plan(text: str, *args: str) -> tuple[list[dict], float]:
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(text)
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q", *args],
                   check=True)
    wall = time.monotonic() - t
    out = subprocess.run([sys.executable, "-m", "manybench", "export", d, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out), wall


def phases_of(rows: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(r["phase"], []).append(r)
    return out


def _barrier_child(barrier, q) -> None:
    os.sched_setaffinity(0, {os.getpid() % os.cpu_count()})
    for _ in range(50):
        barrier.wait()
        q.put(time.time_ns())


def barrier_skew(n: int, rounds: int = 50) -> list[float]:
    """Peer: start skew of n processes released by a multiprocessing.Barrier."""
    barrier, q = mp.Barrier(n), mp.Queue()
    procs = [mp.Process(target=_barrier_child, args=(barrier, q)) for _ in range(n)]
    for p in procs:
        p.start()
    stamps = [q.get() for _ in range(n * rounds)]
    for p in procs:
        p.join()
    # stamps arrive interleaved by round: group n at a time in time order
    stamps.sort()
    return [(max(g) - min(g)) / 1e3 for g in (stamps[i:i + n] for i in range(0, len(stamps), n))]


def c_floor(rounds: int) -> list[float]:
    """Peer: start skew (us) of two pinned C processes with the slots' spin, per round."""
    d = tempfile.mkdtemp(prefix="mb-bench-")
    exe = os.path.join(d, "start_floor")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "start_floor.c")
    subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
    out = subprocess.run([exe, str(rounds), "300000", "3000000"], check=True,
                         capture_output=True, text=True).stdout
    return [int(x) / 1e3 for x in out.split()]


def slot_pss_mb(n: int) -> list[float]:
    """PSS of each slot of a live run (a long command phase keeps the pool up)."""
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(f'[placement]\nworkers = {n}\n[[task]]\nname = "nap"\ncommand = ["sleep", "3"]\n')
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q"])
    time.sleep(1.5)
    me = psutil.Process(proc.pid)
    slots = [c for c in me.children() if c.name() != "sleep"]
    pss = [c.memory_full_info().pss / 2**20 for c in slots]
    proc.wait()
    return pss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", type=int, default=1000)
    ap.add_argument("--big", type=int, default=56)
    a = ap.parse_args()

    rows, wall = run_plan(f'repeat = {a.phases}\n[placement]\nworkers = 2\n'
                          '[[task]]\nname = "sync"\nkernel = "null"\n')
    ph = phases_of(rows)
    skews = [(max(r["start_ns"] for r in g) - min(r["start_ns"] for r in g)) / 1e3 for g in ph.values()]
    late = [(r["start_ns"] - r["t0_ns"]) / 1e3 for r in rows]
    peer = barrier_skew(2)
    floor = c_floor(len(ph))
    span = (max(r["end_ns"] for r in rows) - min(r["t0_ns"] for r in rows)) / 1e9
    print(f"null, 2 slots, {len(ph)} phases: skew median {statistics.median(skews):.1f} us "
          f"(goal <= 20), p99 {pct(skews, 99):.1f} us (goal <= 500); lateness median "
          f"{statistics.median(late):.1f} us")
    print(f"  peer (C floor: 2 pinned processes, sleep + spin to T0): skew median "
          f"{statistics.median(floor):.1f} us, p99 {pct(floor, 99):.1f} us -> manybench/floor "
          f"p99 ratio {pct(skews, 99) / max(pct(floor, 99), 1e-3):.2f}")
    print(f"  peer (multiprocessing.Barrier release, 2 procs): skew median "
          f"{statistics.median(peer):.1f} us, p99 {pct(peer, 99):.1f} us -> manybench/peer median "
          f"ratio {statistics.median(skews) / max(statistics.median(peer), 1e-9):.2f}")
    print(f"turnaround: {len(ph)} null phases in {span:.2f} s from first T0 to last end "
          f"(goal <= 5 s for 1,000); whole command {wall:.2f} s")

    rows, wall = run_plan(f'repeat = 20\n[placement]\nworkers = {a.big}\n'
                          '[[task]]\nname = "sync"\nkernel = "null"\n')
    over = [(max(r["end_ns"] for r in g) - min(r["start_ns"] for r in g)) / 1e6
            for g in phases_of(rows).values()]
    peer = barrier_skew(a.big, 20)
    print(f"null, {a.big} slots on {os.cpu_count()} cores: sync overhead median "
          f"{statistics.median(over):.2f} ms (goal <= 5 ms; SMTEF 50 ms at 56 workers), "
          f"max {max(over):.2f} ms")
    print(f"  peer (Barrier release, {a.big} procs): start spread median "
          f"{statistics.median(peer) / 1e3:.2f} ms -> ratio "
          f"{statistics.median(over) / max(statistics.median(peer) / 1e3, 1e-9):.2f}")

    _, wall = run_plan(f'[placement]\nworkers = {a.big}\n[[task]]\nname = "sync"\nkernel = "null"\n')
    print(f"{a.big}-slot one-phase run, whole command: {wall:.2f} s (goal <= 3 s)")
    pss = slot_pss_mb(a.big)
    print(f"slot PSS with {a.big} slots: median {statistics.median(pss):.1f} MB, max "
          f"{max(pss):.1f} MB (goal <= 20 MB each)")


if __name__ == "__main__":
    main()
