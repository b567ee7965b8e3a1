#!/usr/bin/env python3
"""Spin only where it pays (issue 30): null phases with 2 slots on 2 cpus (a core each, so
placement lets them spin) and with 8 slots (oversubscribed: they sleep to T0), under a
competing spinner, each run by this tree and by the tree before (`--before`, a git ref).

  python benchmarks/bench_spin.py                         # 1,000 phases, 3 rounds
  python benchmarks/bench_spin.py --phases 400 --rounds 2 --spinner pinned

The spinner: `one` (default) an unpinned busy loop, a busy node's other work; `first` one
pinned to the first cpu (on a quiet machine one slot's cpu busy, its sibling's idle: the
sibling's spin is held, node/spin_hold.py); `pinned` one busy loop pinned to each cpu;
`none`. It runs through every run. Per run: the slots' cpu time per slot-phase (user +
system of the slot processes from /proc, psutil, between a fifth and nine tenths of the
phases stored: the slots' own work, what the spin costs; load stretches wall time, not this
much) with their context switches per slot-phase (voluntary: the wake-ups), the
coordinator's per phase beside it, phases per second (first T0 to last), the skew (max
start - min start) p50 / p99, and how the slots waited (the records' `metrics.spun`: spun /
slept, and of those slept how many for a sibling's busy cpus, `metrics.spin_held`; none
before issue 30).

Goal (issue 30): this tree's 2-slot slot cpu per slot-phase <= its 8-slot one (median of the
paired ratios); the ratio 2 slots this tree / before is printed beside it, with the skew.
The machine's load average is printed before, after and with each run.
Pairs alternate which side runs first; the first pair is a warm-up, not counted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

import harness
from harness import Goal, StoredPhases, alternate, info, null_plan, verdict
from peer_tree import drop_tree, env_of, load_text, trees_with_before

BEFORE = "int29"      # the tree before issue 30


def cpu_of(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def switches_of(procs: list[psutil.Process]) -> tuple[int, int]:
    """Voluntary (wake-ups) and involuntary context switches of the processes, summed."""
    vol = inv = 0
    for p in procs:
        try:
            c = p.num_ctx_switches()
            vol, inv = vol + c.voluntary, inv + c.involuntary
        except psutil.Error:
            pass
    return vol, inv


def one_run(tree: str, workers: int, phases: int) -> dict:
    """A run of `phases` null phases with `workers` slots by `tree`'s manybench: its cpu per
    slot-phase (slots) and per phase (coordinator) over the middle phases, rate, skew."""
    d = tempfile.mkdtemp(prefix="mb-spin-")
    try:
        path = os.path.join(d, "plan.toml")
        with open(path, "w") as f:
            f.write(null_plan(workers, phases))
        p = subprocess.Popen([sys.executable, "-m", "manybench", "run", path, "-o", d, "-q"],
                             env=env_of(tree), stderr=subprocess.PIPE, text=True)
        stored = StoredPhases(os.path.join(d, "results.db"))
        coord = psutil.Process(p.pid)
        marks = []
        for at in (phases // 5, phases * 9 // 10):
            while p.poll() is None and stored.count() < at:
                time.sleep(0.02)
            try:
                slots = coord.children()
            except psutil.Error:
                slots = []
            marks.append((stored.count(), cpu_of([coord]), cpu_of(slots), len(slots),
                          switches_of(slots)))
        stored.close()
        err = p.communicate()[1]
        if p.returncode != 0:
            sys.exit(f"manybench run failed (exit {p.returncode}):\n{err[-2000:]}")
        (n1, c1, s1, _, w1), (n2, c2, s2, k, w2) = marks
        if n2 <= n1 or k != workers:
            sys.exit(f"the run ended before its middle phases could be measured "
                     f"({n1} -> {n2} phases, {k} slot processes seen)")
        db = sqlite3.connect(os.path.join(d, "results.db"))
        starts: dict[int, list[int]] = {}
        ways = {"spun": 0, "slept": 0, "held": 0}
        for ph, s, m in db.execute("SELECT phase, start_ns, metrics FROM records"):
            starts.setdefault(ph, []).append(s)
            m = json.loads(m or "{}")
            if m.get("spun") is not None:
                ways["spun" if m["spun"] else "slept"] += 1
            ways["held"] += "spin_held" in m
        t0s = [t for (t,) in db.execute("SELECT t0_ns FROM phases ORDER BY idx")]
        db.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    skews = [(max(v) - min(v)) / 1e3 for v in starts.values()]
    per = (n2 - n1) * workers      # slot-phases between the marks
    return {"slot": (s2 - s1) / per * 1e6, "coord": (c2 - c1) / (n2 - n1) * 1e6,
            "vol": (w2[0] - w1[0]) / per, "inv": (w2[1] - w1[1]) / per,
            "rate": (len(t0s) - 1) / ((t0s[-1] - t0s[0]) / 1e9),
            "skew50": statistics.median(skews), "skew99": harness.pct(skews, 99),
            "ways": ways if any(ways.values()) else None, "load": os.getloadavg()[0]}


def show(rnd: int, got: dict[str, dict]) -> None:
    what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
    print(f"  {what}:", flush=True)
    for name, g in got.items():
        ways = (f"spun {g['ways']['spun']}, slept {g['ways']['slept']} (held "
                f"{g['ways'].get('held', 0)})" if g["ways"] else "not recorded")
        print(f"    {name}: slot cpu {g['slot']:.0f} us per slot-phase (switches "
              f"{g['vol']:.2f} voluntary, {g['inv']:.2f} involuntary), coordinator "
              f"{g['coord']:.0f} us per phase, {g['rate']:.0f} phases/s, skew p50 "
              f"{g['skew50']:.1f} us, p99 {g['skew99']:.0f} us; records {ways}; load "
              f"{g['load']:.1f}", flush=True)


def spinners(kind: str) -> list[subprocess.Popen]:
    loop = "while True: pass"
    if kind == "none":
        return []
    if kind == "one":
        return [subprocess.Popen([sys.executable, "-c", loop])]
    cpus = sorted(os.sched_getaffinity(0))
    return [subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, "
                              f"[{c}])\n{loop}"])
            for c in (cpus[:1] if kind == "first" else cpus)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3, help="counted pairs")
    ap.add_argument("--spinner", choices=["one", "first", "pinned", "none"], default="one")
    ap.add_argument("--before", default=BEFORE, help="git ref of the peer tree ('' = none)")
    a = ap.parse_args()
    trees, made = trees_with_before(a.before)
    print(f"{a.phases:,} null phases per run, 2 and 8 slots on {os.cpu_count()} cpus, "
          f"competing spinner: {a.spinner}; before: {load_text()}", flush=True)
    spin = spinners(a.spinner)
    try:
        sides = {f"{n}, {w} slots": (lambda t=t, w=w: one_run(t, w, a.phases))
                 for n, t in trees.items() for w in (2, 8)}
        runs = alternate(sides, a.rounds, 1, show)
    finally:
        for s in spin:
            s.kill()
            s.wait()
        if made:
            drop_tree(made)
    col = lambda side, key: [r[key] for r in runs[side]]   # noqa: E731
    ok = verdict(Goal("slot cpu per slot-phase, 2 slots / 8 slots, this tree", 1.0, "lower"),
                 col("this tree, 2 slots", "slot"), col("this tree, 8 slots", "slot"), "us")
    if made:
        info("  the same, the tree before", col("before, 2 slots", "slot"),
             col("before, 8 slots", "slot"), "us", "lower")
        info("  slot cpu per slot-phase, 2 slots, this tree / before",
             col("this tree, 2 slots", "slot"), col("before, 2 slots", "slot"), "us", "lower")
        info("  coordinator cpu per phase, 2 slots, this tree / before",
             col("this tree, 2 slots", "coord"), col("before, 2 slots", "coord"), "us", "lower")
        info("  phases/s, 2 slots, this tree / before", col("this tree, 2 slots", "rate"),
             col("before, 2 slots", "rate"), "phases/s")
        for q in ("skew50", "skew99"):
            info(f"  skew {q[4:]}, 2 slots, this tree / before", col("this tree, 2 slots", q),
                 col("before, 2 slots", q), "us", "lower")
    print(f"after: {load_text()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
