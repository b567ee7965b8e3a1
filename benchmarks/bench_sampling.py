#!/usr/bin/env python3
"""Progress sampling inside phases costs <= 1% of io.write bandwidth and adds nothing to the
start skew: the same io.write phases with sampling on and off, paired, in the same run.

    python benchmarks/bench_sampling.py [DIR] [--slots 2] [--duration 1s] [--block 64KiB]
                                        [--sample 0.1] [--repeat 5] [--rounds 3] [--warmup 1]

One manybench run per round holds two variants of one io.write task, "on" (sample = the
interval, 100 ms by default: the sampler thread reads the C loop's counter) and "off"
(sample = 0), interleaved repetition by repetition (rep 0 on, rep 0 off, rep 1 on, ...);
which variant goes first alternates from round to round. Writes go to the page cache
(fsync = "never", a stonewall `duration`) with small blocks: the loop is as fast and the
per-operation counter store as frequent as io.write gets, the worst case for the sampler.
Telemetry is off in both, so only sampling differs.

Pairs: each repetition's on and off phases. Figures per phase, as manybench reports them:
aggregate bandwidth (sum of bytes / (last end - first start)) and skew (max start - min
start). Gates: the median of the paired bandwidth ratios on / off >= 0.99 (<= 1% cost), and
the median of the paired skew differences on - off <= 0 + the noise of the off phases
between themselves (the median absolute difference of consecutive off phases' skews): the
sampler adds nothing a repeat of the same phase would not. Exit status 1 when missed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile

import harness
from harness import Goal, alternate, verdict

from manybench.units import parse_duration, parse_size

BW_GOAL = Goal("io.write bandwidth, sampling on / off", 0.99)


def plan(d: str, slots: int, duration: float, block: int, sample: float, repeat: int,
         on_first: bool) -> str:
    on = f'[[variant]]\nname = "on"\nset = {{ "task.w.sample" = {sample} }}\n'
    off = '[[variant]]\nname = "off"\nset = { "task.w.sample" = 0 }\n'
    return f"""
name = "sampling"
scratch = "{d}"
repeat = {repeat}
telemetry = 0
[placement]
workers = {slots}
[[task]]
name = "w"
kernel = "io.write"
duration = {duration}
size = "64GiB"
block = {block}
fsync = "never"
{on + off if on_first else off + on}"""


def one_run(d: str, args: argparse.Namespace, on_first: bool) -> list[tuple[float, ...]]:
    """Per repetition: (bandwidth on, bandwidth off, skew on ns, skew off ns)."""
    rows = harness.run_plan(plan(d, args.slots, args.duration, args.block, args.sample,
                                 args.repeat, on_first))
    fig: dict[tuple[int, str], tuple[float, float]] = {}
    for recs in harness.phases(rows).values():
        if any(r["status"] != "ok" for r in recs):
            sys.exit(f"a phase failed: {[r['error'] for r in recs]}")
        starts = [r["start_ns"] for r in recs]
        window = (max(r["end_ns"] for r in recs) - min(starts)) / 1e9
        fig[(recs[0]["rep"], recs[0]["variant"])] = (sum(r["bytes"] for r in recs) / window,
                                                     max(starts) - min(starts))
    return [(fig[(k, "on")][0], fig[(k, "off")][0], fig[(k, "on")][1], fig[(k, "off")][1])
            for k in range(args.repeat)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default=None, help="scratch (default: a temp dir)")
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--duration", type=parse_duration, default=1.0)
    ap.add_argument("--block", type=parse_size, default=64 * 1024)
    ap.add_argument("--sample", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    d = args.dir or tempfile.mkdtemp(prefix="mb-bench-sampling-")
    flip = iter(range(10**6))
    runs = alternate({"run": lambda: one_run(d, args, next(flip) % 2 == 0)}, args.rounds,
                     args.warmup, show=lambda rnd, got: print(
                         f"  {'warm-up (not counted)' if rnd < 0 else f'round {rnd + 1}'}: "
                         + "  ".join(f"on {p[0] / 2**20:,.0f} off {p[1] / 2**20:,.0f} MiB/s"
                                     for p in got["run"]), flush=True))
    pairs = [p for run in runs["run"] for p in run]
    on_bw, off_bw = [p[0] for p in pairs], [p[1] for p in pairs]
    ok = verdict(BW_GOAL, on_bw, off_bw, "B/s")
    diffs = [(p[2] - p[3]) / 1e3 for p in pairs]
    off_skews = [p[3] / 1e3 for p in pairs]
    noise = statistics.median(abs(a - b) for a, b in zip(off_skews, off_skews[1:])) \
        if len(off_skews) > 1 else 0.0
    med = statistics.median(diffs)
    skew_ok = med <= noise
    print(f"skew, sampling on - off = {med:+.1f} us median of {len(diffs)} paired differences "
          f"(goal <= 0 + noise {noise:.1f} us, the median difference between consecutive "
          f"off phases) {'PASS' if skew_ok else 'FAIL'}; on median "
          f"{statistics.median(p[2] for p in pairs) / 1e3:.1f} us, off median "
          f"{statistics.median(off_skews):.1f} us; pairs "
          + " ".join(f"{x:+.1f}" for x in diffs), flush=True)
    return 0 if ok and skew_ok else 1


if __name__ == "__main__":
    sys.exit(main())
