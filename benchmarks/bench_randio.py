#!/usr/bin/env python3
"""io.randread against fio with the same job, measured in the same run.

    python benchmarks/bench_randio.py [DIR] [--size 256MiB] [--runtime 2s] [--repeat 5]
                                      [--depths 1,32] [--engines auto|all|io_uring,aio,...]
                                      [--modes cached,direct,dropped] [--randommap on,off]

One slot, one file laid out once and shared by both tools, 4 KiB random reads for `runtime`
seconds (time-based), at each queue depth, in each mode:
  cached   direct = false, the file just written so its pages are in the cache: io.randread
           with cache = "keep", fio with --invalidate=0 (neither drops them);
  direct   O_DIRECT (DIR must be on a file system that allows it, /var/tmp here), the same
           cache settings;
  dropped  each side's defaults: io.randread drops the file's cache before T0 (cache =
           "drop"), fio with its default --invalidate=1 drops it after its clock starts
           (time-based: the drop shortens its reading time by the DONTNEED's few ms of a
           `runtime` window; said beside the figures). Buffered reads of a file that
           starts uncached: which blocks repeat decides how many reads the device serves.
--randommap on (io.randread's default and fio's: each block once per pass) or off
(io.randread randommap = false, fio --norandommap: drawn with replacement); both by default.
fio is told the engine manybench used (the record's extra `engine`, as `auto` resolved it):
    psync    -> --ioengine=psync --iodepth=1 (auto at iodepth 1: pread in the slot's thread)
    io_uring -> --ioengine=io_uring --iodepth=N
    aio      -> --ioengine=libaio --iodepth=N
    threads  -> --ioengine=psync --numjobs=N --group_reporting (N threads of pread)
and --rw=randread --bs=4k --direct=0/1 --size --runtime --time_based --thread.

Both pinned as slot 0 of a one-worker phase is (manybench in this process, fio as a child
with the same affinity). After an uncounted warm-up round, rounds alternate which tool goes
first. Each run's device bytes per byte read are counted where load cannot move them
(io.randread: this process's /proc/self/io read_bytes over its run; fio: its reaped
rusage, work.children_io) and printed; in dropped mode with the map they must agree within
5% (median over rounds): the work both sides did (drawn with replacement, the repeats grow
with the I/Os a side gets through: printed, not compared). Gate: the median of the
per-round IOPS ratios (manybench / fio) >= 0.9 for cached and direct; dropped with the map,
the same device work and 0.95-1.05; dropped without it, printed for information. Best-of-N
beside each. Exit status 1 when a goal is missed, 2 when fio is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import statistics
import tempfile
from dataclasses import dataclass

import harness
import work
from harness import Goal, alternate, info, verdict
from settle import settle

from manybench import _native
from manybench.kernels import KERNELS, SlotContext
from manybench.kernels.pagecache import read_bytes
from manybench.units import format_size, parse_duration, parse_size

GOAL = 0.9
AGREE = (0.95, 1.05)      # dropped mode: the same device work, the same rate
DEVICE_TOLERANCE = 0.05
[AFFINITY] = harness.slot_affinity(1)
BLOCK = 4096
FIO_ENGINE = {"psync": "psync", "io_uring": "io_uring", "aio": "libaio", "threads": "psync"}


@dataclass(frozen=True)
class Case:
    depth: int
    mode: str           # cached, direct, dropped
    randommap: bool

    @property
    def label(self) -> str:
        return f"{self.mode} iodepth {self.depth}{'' if self.randommap else ' norandommap'}"


def ours(path: str, size: int, case: Case, engine: str, runtime: float
         ) -> tuple[float, str, float]:
    """(IOPS, engine used, device bytes per byte read) of io.randread through its own
    prepare/run; the device bytes are this process's over the run alone."""
    d, name = os.path.split(path)
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=d, shared=d)
    k = KERNELS["io.randread"]
    st = k.prepare(ctx, {"size": size, "block": BLOCK, "file": name, "iodepth": case.depth,
                         "direct": case.mode == "direct", "engine": engine,
                         "duration": runtime, "randommap": case.randommap,
                         # as fio --invalidate=0, or both sides' default drop
                         "cache": "drop" if case.mode == "dropped" else "keep"})
    try:
        before = read_bytes()
        r = k.run(st, _native.now_ns() + 2_000_000, 0)
        after = read_bytes()
    finally:
        k.cleanup(st)
    if r.status != "ok":
        sys.exit(f"io.randread failed: {r.error}")
    dev = (after - before) / r.bytes if before is not None and after is not None else -1.0
    return r.metrics["iops"], r.extra["engine"], dev


def fio(path: str, size: int, case: Case, engine: str, runtime: float) -> tuple[float, float]:
    """(IOPS, device bytes per byte read) of fio's job (its reaped rusage: the reads it made
    the device do, its own start-up's included)."""
    cmd = ["fio", "--name=bench", f"--filename={path}", "--rw=randread", f"--bs={BLOCK}",
           f"--size={size}", f"--runtime={runtime}", "--time_based",
           f"--direct={int(case.mode == 'direct')}", "--thread", "--output-format=json",
           f"--invalidate={int(case.mode == 'dropped')}", f"--ioengine={FIO_ENGINE[engine]}"]
    cmd += [] if case.randommap else ["--norandommap"]
    if engine == "threads":
        cmd += [f"--numjobs={case.depth}", "--group_reporting"]
    else:
        cmd += [f"--iodepth={case.depth}"]
    before = work.children_io()[0]
    p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=harness.pinned(AFFINITY))
    dev = work.children_io()[0] - before
    if p.returncode != 0:
        sys.exit(f"fio failed: {p.stderr.strip() or p.stdout.strip()}")
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]["read"]
    return float(job["iops"]), dev / job["io_bytes"] if job["io_bytes"] else -1.0


def compare(path: str, args, case: Case, engine: str) -> bool:
    used: list[str] = []     # the engine io.randread ran: fio runs the same
    dev: dict[str, list[float]] = {"manybench": [], "fio": []}

    def quiet() -> None:      # reads of a file that starts uncached: an idle disk for each
        if case.mode == "dropped":
            line = settle(os.path.dirname(path))
            if not line.startswith("settled"):
                print(f"  {line}", flush=True)

    def mine() -> float:
        quiet()
        iops, eng, d = ours(path, args.size, case, engine, args.runtime)
        used.append(eng)
        dev["manybench"].append(d)
        return iops

    def theirs() -> float:
        quiet()
        iops, d = fio(path, args.size, case, used[-1], args.runtime)
        dev["fio"].append(d)
        return iops
    # a short probe run learns the engine `engine` resolves to, for the label
    used.append(ours(path, args.size, case, engine, min(args.runtime, 0.2))[1])
    label = f"{case.label} {used[-1]}"
    rounds = alternate({"manybench": mine, "fio": theirs}, args.repeat, args.warmup,
                       harness.show_round(label, "IOPS"))
    if len(set(used)) != 1:
        sys.exit(f"io.randread used different engines from run to run: {sorted(set(used))}")
    n = len(rounds["manybench"])
    a, b = (statistics.median(dev[w][-n:]) for w in ("manybench", "fio"))
    # with the map both read each block once per pass from the device (each later pass
    # dropped first); drawn with replacement, the repeats grow with the I/Os a time-based
    # run gets through, so a faster side reads less per byte: not the same work to compare
    gated = case.mode == "dropped" and case.randommap
    same = b > 0 and abs(a / b - 1) <= DEVICE_TOLERANCE
    print(f"  {label}: device bytes per byte read, median of {n}: manybench {a:.3f}, fio "
          f"{b:.3f}" + (f" ({'the same' if same else 'DIFFERENT'} work, within "
                        f"{DEVICE_TOLERANCE:.0%})" if gated else ""), flush=True)
    if case.mode != "dropped":
        return verdict(Goal(f"io.randread {label} / fio", GOAL), rounds["manybench"],
                       rounds["fio"], "IOPS")
    print(f"  {label}: both drop the file's cache first and before each later pass of the "
          f"map; fio's first drop is inside its {args.runtime:g} s window (invalidate=1), "
          "io.randread's before T0", flush=True)
    if not gated:
        info(f"io.randread {label} / fio's norandommap", rounds["manybench"], rounds["fio"],
             "IOPS")
        return True
    return verdict(Goal(f"io.randread {label} / fio's default", AGREE[0], upper=AGREE[1]),
                   rounds["manybench"], rounds["fio"], "IOPS") and same


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
    ap.add_argument("--modes", default="cached,direct,dropped")
    ap.add_argument("--randommap", default="on,off",
                    help="on (each block once per pass, both tools' default), off, or both")
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
                    for rmap in args.randommap.split(","):
                        ok &= compare(path, args, Case(depth, mode, rmap == "on"), engine)
    finally:
        if made:
            shutil.rmtree(d, ignore_errors=True)
        elif os.path.exists(path):
            os.unlink(path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
