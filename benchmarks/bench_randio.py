#!/usr/bin/env python3
"""io.randread against fio with the same job, measured in the same run.

    python benchmarks/bench_randio.py [DIR] [--size 256MiB] [--runtime 2s] [--repeat 5]
                                      [--depths 1,32] [--engines auto|all|io_uring,aio,...]

One slot, one file laid out once and shared by both tools, 4 KiB uniform random reads for
`runtime` seconds (time-based), at each queue depth, both page-cached (direct = false: the
file was just written, so its pages are in the cache; io.randread runs with cache = "keep"
and fio with --invalidate=0, so neither drops them) and with O_DIRECT (direct = true; DIR
must be on a file system that allows it, /var/tmp here; the same cache settings).
fio is told the engine manybench used (the record's extra `engine`, as `auto` resolved it):
    psync    -> --ioengine=psync --iodepth=1 (auto at iodepth 1: pread in the slot's thread)
    io_uring -> --ioengine=io_uring --iodepth=N
    aio      -> --ioengine=libaio --iodepth=N
    threads  -> --ioengine=psync --numjobs=N --group_reporting (N threads of pread)
and --rw=randread --bs=4k --norandommap (offsets drawn with replacement, as manybench)
--direct=0/1 --size --runtime --time_based --thread.

Both pinned as slot 0 of a one-worker phase is (manybench in this process, fio as a child
with the same affinity). After an uncounted warm-up round, rounds alternate which tool goes
first. Gate: the median of the per-round IOPS ratios (manybench / fio) >= 0.9 for every case;
best-of-N printed beside it. Exit status 1 when a goal is missed, 2 when fio is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import harness
from harness import Goal, alternate, verdict

from manybench import _native
from manybench.kernels import KERNELS, SlotContext
from manybench.units import format_size, parse_duration, parse_size

GOAL = 0.9
[AFFINITY] = harness.slot_affinity(1)
BLOCK = 4096
FIO_ENGINE = {"psync": "psync", "io_uring": "io_uring", "aio": "libaio", "threads": "psync"}


def ours(path: str, size: int, depth: int, direct: bool, engine: str, runtime: float
         ) -> tuple[float, float, str]:
    """(IOPS, p50 latency us, engine used) of io.randread through its own prepare/run."""
    d, name = os.path.split(path)
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=d, shared=d)
    k = KERNELS["io.randread"]
    st = k.prepare(ctx, {"size": size, "block": BLOCK, "file": name, "iodepth": depth,
                         "direct": direct, "engine": engine, "duration": runtime,
                         "cache": "keep"})    # as fio --invalidate=0
    try:
        r = k.run(st, _native.now_ns() + 2_000_000, 0)
    finally:
        k.cleanup(st)
    if r.status != "ok":
        sys.exit(f"io.randread failed: {r.error}")
    return r.metrics["iops"], r.metrics["lat_p50_us"], r.extra["engine"]


def fio(path: str, size: int, depth: int, direct: bool, engine: str, runtime: float
        ) -> tuple[float, float]:
    """(IOPS, p50 latency us) that fio reports for the same job (its lat: slat + clat)."""
    cmd = ["fio", "--name=bench", f"--filename={path}", "--rw=randread", f"--bs={BLOCK}",
           f"--size={size}", f"--runtime={runtime}", "--time_based", "--norandommap",
           f"--direct={int(direct)}", "--invalidate=0", "--thread", "--output-format=json",
           "--lat_percentiles=1",  # submission to completion, as manybench's latency
           f"--ioengine={FIO_ENGINE[engine]}"]
    if engine == "threads":
        cmd += [f"--numjobs={depth}", "--group_reporting"]
    else:
        cmd += [f"--iodepth={depth}"]
    p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=harness.pinned(AFFINITY))
    if p.returncode != 0:
        sys.exit(f"fio failed: {p.stderr.strip() or p.stdout.strip()}")
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]["read"]
    pct = job.get("lat_ns", {}).get("percentile", {})
    return float(job["iops"]), float(pct.get("50.000000", 0)) / 1e3


def compare(path: str, args, depth: int, direct: bool, engine: str) -> bool:
    used: list[str] = []     # the engine io.randread ran: fio runs the same

    def mine() -> float:
        iops, _, eng = ours(path, args.size, depth, direct, engine, args.runtime)
        used.append(eng)
        return iops

    def theirs() -> float:
        iops, _ = fio(path, args.size, depth, direct, used[-1], args.runtime)
        return iops
    # a short probe run learns the engine `engine` resolves to, for the label
    used.append(ours(path, args.size, depth, direct, engine, min(args.runtime, 0.2))[2])
    label = f"{'direct' if direct else 'cached'} iodepth {depth} {used[-1]}"
    rounds = alternate({"manybench": mine, "fio": theirs}, args.repeat, args.warmup,
                       harness.show_round(label, "IOPS"))
    if len(set(used)) != 1:
        sys.exit(f"io.randread used different engines from run to run: {sorted(set(used))}")
    return verdict(Goal(f"io.randread {label} / fio", GOAL), rounds["manybench"],
                   rounds["fio"], "IOPS")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", help="directory to work in (default: a temp dir under "
                                           "/var/tmp, removed afterwards)")
    ap.add_argument("--size", default="256MiB", type=parse_size)
    ap.add_argument("--runtime", default="2s", type=parse_duration)
    ap.add_argument("--repeat", default=5, type=int)
    ap.add_argument("--warmup", default=1, type=int, help="uncounted rounds first")
    ap.add_argument("--depths", default="1,32")
    ap.add_argument("--engines", default="auto",
                    help="auto (what io.randread picks), all, or a comma-separated list")
    ap.add_argument("--modes", default="cached,direct")
    args = ap.parse_args()
    if not shutil.which("fio"):
        print("fio is not installed: nothing to compare with", file=sys.stderr)
        return 2
    engines = ["psync", "io_uring", "aio", "threads"] if args.engines == "all" else \
        args.engines.split(",")
    harness.pin_self(AFFINITY)   # io.randread runs in this process, as in a pinned slot
    made = args.dir is None
    d = tempfile.mkdtemp(prefix="manybench-bench-randio-", dir="/var/tmp") if made else args.dir
    path = os.path.join(d, "bench-randio.dat")
    print(f"1 slot, {format_size(args.size)} file on {d}, 4 KiB random reads, "
          f"{args.runtime:g} s per run, {args.repeat} runs per case", flush=True)
    ok = True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _native.layout(fd, path, args.size, 1 << 20)
        finally:
            os.close(fd)
        for engine in engines:
            for mode in args.modes.split(","):
                for depth in (int(x) for x in args.depths.split(",")):
                    if engine == "psync" and depth != 1:
                        continue     # one I/O at a time: iodepth 1 only
                    ok &= compare(path, args, depth, mode == "direct", engine)
    finally:
        if made:
            shutil.rmtree(d, ignore_errors=True)
        elif os.path.exists(path):
            os.unlink(path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
