#!/usr/bin/env python3
"""Synchronized-start figures of the core, each against peers measuring the same figure.

  python benchmarks/bench_sync.py [--phases 1000] [--big 56] [--big-phases 20] [--rounds 3]

manybench runs null phases through its command line: `--phases` with 2 slots, `--big-phases`
with `--big` slots (default order and pinning). Its figures, per phase, as its reports
define them (docs/definitions.md): skew = max(start) - min(start); sync overhead = last end -
first start (the null task does nothing, so this is what synchronizing costs).

Peers do exactly what a null phase does, with the same process count and the same pinning:
N processes, each pinned to the affinity manybench's slot of the same rank gets for that
worker count (run/placement.py's place() on this machine), released together round after
round, each stamping start and end (CLOCK_REALTIME) around nothing; per round, skew = max
start - min start and sync overhead = max end - min start, as above.
  - C floor (peers/start_floor.c, built with the package's compiler and flags): sleep to an
    absolute T0, spin the last SPIN_NS only where manybench's slots spin (a core each).
  - Barrier: Python processes released by a multiprocessing.Barrier, as most harnesses do.
Sides alternate per pair (manybench, C floor, Barrier, then reversed), the first pair a
warm-up that is not counted; each side's figure per pair is the median over its phases.

Goals (issue #2). Gated:
  - null phases, 2 slots: skew median <= 20 us and p99 <= 500 us (medians over pairs); the
    C floor's and Barrier's skew beside them, as ratios (skew against skew)
  - sync overhead with --big slots (56: SMTEF's 50 ms at 56 workers): median <= 5 ms, and the
    median of the paired ratios to the Barrier release's sync overhead <= 1.0; the C
    floor's ratio beside it
  - turnaround: 1,000 null phases with 2 slots in <= 5 s, first T0 to last end (scaled from
    --phases); Barrier's 2-process release of as many rounds beside it
  - a --big-slot one-phase run <= 3 s for the whole command, alternated with `python -m
    manybench --version` (interpreter start and import) as its peer
  - slot memory: <= 20 MB PSS each with --big slots, beside a bare Python interpreter's PSS
Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import harness
from harness import ENV, Goal, absolute, alternate, info, verdict

FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "start_floor.c")
US, MS = 1e3, 1e6
TURNAROUND_PHASES = 1000


def figures(groups: list[list[tuple[int, int]]]) -> dict:
    """Per round (phase) of (start, end) stamps: skew and sync overhead in ns; and the span
    from the first start to the last end of all rounds."""
    return {"skew": [max(s for s, _ in g) - min(s for s, _ in g) for g in groups],
            "overhead": [max(e for _, e in g) - min(s for s, _ in g) for g in groups],
            "span_ns": max(e for g in groups for _, e in g) - min(s for g in groups for s, _ in g)}


# -- manybench ---------------------------------------------------------------------------------

def manybench(workers: int, repeat: int) -> dict:
    rows = harness.run_plan(harness.null_plan(workers, repeat))
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        sys.exit(f"null phase failed: {bad[0]['error']}")
    groups = [[(r["start_ns"], r["end_ns"]) for r in g] for g in harness.phases(rows).values()]
    out = figures(groups)
    # turnaround as the goal states it: from the first T0 to the last end
    out["span_ns"] = max(r["end_ns"] for r in rows) - min(r["t0_ns"] for r in rows)
    return out


# -- peers: the same processes, pinned as the slots, released by their own mechanism -------------

def floor(exe: str, workers: int, rounds: int) -> dict:
    """The C floor: one process per slot with its affinity and spin on this machine."""
    places = harness.slot_places(workers)
    gap = 3_000_000 + 200_000 * workers
    args = [f"{harness.cpulist(p.affinity) if p.affinity else '-'}:"
            f"{harness.SPIN_NS if p.spin else 0}" for p in places]
    out = subprocess.run([exe, str(rounds), str(gap), *args], check=True,
                         capture_output=True, text=True).stdout
    nums = [int(x) for x in out.split()]
    skew, over = nums[0::2], nums[1::2]
    return {"skew": skew, "overhead": over}


def _barrier_child(barrier, q, affinity: tuple[int, ...], rounds: int) -> None:
    os.sched_setaffinity(0, affinity)
    for r in range(rounds):
        barrier.wait()
        start = time.time_ns()
        end = time.time_ns()
        q.put((r, start, end))


def barrier(workers: int, rounds: int) -> dict:
    """Processes pinned as the slots, released by a multiprocessing.Barrier each round."""
    ctx = mp.get_context("fork")
    b, q = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_barrier_child, args=(b, q, aff, rounds))
             for aff in harness.slot_affinity(workers)]
    for p in procs:
        p.start()
    groups: list[list[tuple[int, int]]] = [[] for _ in range(rounds)]
    for _ in range(workers * rounds):
        r, s, e = q.get()
        groups[r].append((s, e))
    for p in procs:
        p.join()
    return figures(groups)


# -- whole command and memory -------------------------------------------------------------------

def one_phase_wall(workers: int) -> float:
    return harness.run_plan_timed(harness.null_plan(workers, 1))[1]


def version_wall() -> float:
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "manybench", "--version"], check=True, env=ENV,
                   capture_output=True)
    return time.monotonic() - t


def slot_pss_mb(n: int) -> list[float]:
    """PSS of each slot of a live run (a long command phase keeps the pool up)."""
    d = tempfile.mkdtemp(prefix="mb-bench-")
    plan = os.path.join(d, "plan.toml")
    with open(plan, "w") as f:
        f.write(f'[placement]\nworkers = {n}\n[[task]]\nname = "nap"\n'
                'command = ["sleep", "4"]\n')
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q"],
                            env=ENV, stderr=subprocess.DEVNULL)
    slots: list[psutil.Process] = []
    for _ in range(60):      # until every slot has forked its command
        time.sleep(0.1)
        slots = [c for c in psutil.Process(proc.pid).children() if c.name() != "sleep"]
        if len(slots) == n and all(c.children() for c in slots):
            break
    pss = [c.memory_full_info().pss / 2**20 for c in slots]
    proc.wait()
    if len(pss) != n:
        sys.exit(f"expected {n} slot processes, found {len(pss)}")
    return pss


def bare_python_pss_mb() -> float:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    time.sleep(0.5)
    pss = psutil.Process(p.pid).memory_full_info().pss / 2**20
    p.wait()
    return pss


# -- the comparison -----------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=1000, help="null phases with 2 slots")
    ap.add_argument("--big", type=int, default=56, help="slots of the sync-overhead figure")
    ap.add_argument("--big-phases", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="counted pairs")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="mb-bench-floor-")
    exe = os.path.join(d, "start_floor")
    harness.compile_c(FLOOR, exe)
    big = harness.slot_places(a.big)
    print(f"{os.cpu_count()} cpus; 2 slots on cpus "
          f"{[p.affinity for p in harness.slot_places(2)]}, spin "
          f"{[p.spin for p in harness.slot_places(2)]}; {a.big} slots: "
          f"{'a core each, spinning' if all(p.spin for p in big) else 'sharing cpus, no spin'}"
          f"; {a.phases} and {a.big_phases} phases (rounds) per side and pair", flush=True)

    def side(fn):
        return lambda: {"small": fn(2, a.phases), "big": fn(a.big, a.big_phases)}

    def show(rnd: int, got: dict) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {what}: 2-slot skew median " + ", ".join(
            f"{n} {statistics.median(g['small']['skew']) / US:.2f} us" for n, g in got.items())
            + f"; {a.big}-slot sync overhead median " + ", ".join(
            f"{n} {statistics.median(g['big']['overhead']) / MS:.3f} ms"
            for n, g in got.items()), flush=True)
    try:
        runs = alternate({"manybench": side(manybench),
                          "C floor": side(lambda w, n: floor(exe, w, n)),
                          "Barrier": side(barrier)}, a.rounds, a.warmup, show)
    finally:
        os.unlink(exe)
        os.rmdir(d)

    def med(who: str, size: str, key: str) -> list[float]:   # per pair: median over phases
        return [statistics.median(r[size][key]) for r in runs[who]]

    def p99(who: str) -> list[float]:
        return [harness.pct(r["small"]["skew"], 99) for r in runs[who]]

    mb, fl, ba = "manybench", "C floor", "Barrier"
    ok = absolute("null, 2 slots: skew median (median over pairs)",
                  statistics.median(med(mb, "small", "skew")) / US, 20, "us",
                  beside=f"C floor {statistics.median(med(fl, 'small', 'skew')) / US:.3f} us, "
                         f"Barrier {statistics.median(med(ba, 'small', 'skew')) / US:.1f} us")
    ok &= absolute("null, 2 slots: skew p99 (median over pairs)",
                   statistics.median(p99(mb)) / US, 500, "us",
                   beside=f"C floor {statistics.median(p99(fl)) / US:.2f} us, Barrier "
                          f"{statistics.median(p99(ba)) / US:.1f} us")
    info("  skew, 2 slots / C floor skew", med(mb, "small", "skew"),
         med(fl, "small", "skew"), "ns", "lower")
    info("  skew, 2 slots / Barrier skew", med(mb, "small", "skew"),
         med(ba, "small", "skew"), "ns", "lower")

    mine = med(mb, "big", "overhead")
    ok &= absolute(f"null, {a.big} slots on {os.cpu_count()} cpus: sync overhead median "
                   "(median over pairs)", statistics.median(mine) / MS, 5, "ms",
                   beside=f"Barrier {statistics.median(med(ba, 'big', 'overhead')) / MS:.3f} ms, "
                          f"C floor {statistics.median(med(fl, 'big', 'overhead')) / MS:.3f} ms;"
                          " SMTEF 50 ms at 56 workers")
    ok &= verdict(Goal(f"{a.big}-slot sync overhead / Barrier release's", 1.0, "lower"), mine,
                  med(ba, "big", "overhead"), "ns")
    info(f"  {a.big}-slot sync overhead / C floor's", mine,
         med(fl, "big", "overhead"), "ns", "lower")

    scale = TURNAROUND_PHASES / a.phases
    spans = [r["small"]["span_ns"] / 1e9 * scale for r in runs[mb]]
    b_spans = [r["small"]["span_ns"] / 1e9 * scale for r in runs[ba]]
    ok &= absolute(f"turnaround of {TURNAROUND_PHASES:,} null phases, 2 slots, first T0 to last "
                   f"end (median over pairs{f', scaled from {a.phases}' if scale != 1 else ''})",
                   statistics.median(spans), 5, "s",
                   beside=f"Barrier release of as many rounds {statistics.median(b_spans):.2f} s")
    info("  turnaround / Barrier's", spans, b_spans, "s", "lower")

    walls = alternate({"manybench run": lambda: one_phase_wall(a.big),
                       "manybench --version": version_wall}, a.rounds, a.warmup,
                      harness.show_round(f"{a.big}-slot one-phase run, whole command", "s"))
    ok &= absolute(f"{a.big}-slot one-phase run, whole command (median over pairs)",
                   statistics.median(walls["manybench run"]), 3, "s",
                   beside=f"`manybench --version` "
                          f"{statistics.median(walls['manybench --version']):.2f} s")
    info("  one-phase run / `manybench --version`", walls["manybench run"],
         walls["manybench --version"], "s", "lower")

    pss = slot_pss_mb(a.big)
    bare = bare_python_pss_mb()
    ok &= absolute(f"slot PSS with {a.big} slots, max", max(pss), 20, "MB",
                   beside=f"median {statistics.median(pss):.1f} MB; a bare Python interpreter "
                          f"{bare:.1f} MB (ratio of the max {max(pss) / bare:.2f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
