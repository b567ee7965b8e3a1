#!/usr/bin/env python3
"""io.write and io.read against fio with the same parameters, measured in the same run.

    python benchmarks/bench_io.py [DIR] [--size 1GiB] [--block 1MiB] [--repeat 3] [--cached]

One slot, one file, sequential, `block`-sized calls, fsync at the end of the writes inside
the timed window (fio: ioengine=sync, end_fsync=1, whose runtime includes that fsync).
Both writers start from a deleted file (fio with fallocate=none, as io.write allocates as
it goes). Reads: both read the same file; by default its cached pages are dropped first the
same way for both (posix_fadvise DONTNEED: io.read drop_cache=true, fio invalidate=1), so
both read from the device; with --cached neither drops them (fio invalidate=0), so both read
from the page cache.

Both run pinned as slot 0 of a one-worker phase is (manybench in this process, fio as a
child with the same affinity). After an uncounted warm-up round, rounds alternate which tool
goes first, with a sync before each. Gate: the median of the per-round bandwidth ratios
(manybench / fio) >= 0.95 for writes and for reads; best-of-N printed beside it (shared and
virtual storage slows single runs down by large factors from outside, seen here: 265 to
1500 MiB/s for the same job). Exit status 1 when a goal is missed.
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
from manybench.units import format_size, parse_size

GOAL = 0.95
MIB = 2**20


def ours(kind: str, path: str, size: int, block: int, cached: bool) -> float:
    """Bytes/s of io.write or io.read through the kernel's own prepare/run."""
    d, name = os.path.split(path)
    ctx = SlotContext(run="bench", node="local", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=d, shared=d)
    params = {"size": size, "block": block, "file": name, "direct": False}
    if kind == "write":
        params["fsync"] = "end"
    else:
        params["drop_cache"] = not cached
    k = KERNELS[f"io.{kind}"]
    state = k.prepare(ctx, params)
    try:
        r = k.run(state, _native.now_ns() + 1_000_000, 0)
    finally:
        k.cleanup(state)
    if r.status != "ok" or r.bytes != size:
        sys.exit(f"io.{kind} failed: {r.error or f'{r.bytes} of {size} bytes'}")
    return r.bytes / (r.elapsed_ns / 1e9)


def fio(kind: str, path: str, size: int, block: int, cached: bool) -> float:
    """Bytes/s that fio reports for the same job (its runtime includes end_fsync)."""
    cmd = ["fio", "--name=bench", f"--filename={path}", f"--rw={kind}", f"--bs={block}",
           f"--size={size}", "--ioengine=sync", "--output-format=json",
           # mmap'd buffers: fio's default malloc'd ones copy page-cache data at a fraction
           # of memory speed here (2 vs 10 GiB/s cached); compare with fio at its best.
           "--mem=mmap"]
    if kind == "write":
        cmd += ["--end_fsync=1", "--fallocate=none"]
    else:
        cmd += [f"--invalidate={0 if cached else 1}"]
    p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=harness.pinned(AFFINITY))
    if p.returncode != 0:
        sys.exit(f"fio failed: {p.stderr.strip() or p.stdout.strip()}")
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0][kind]
    if job["io_bytes"] != size:
        sys.exit(f"fio moved {job['io_bytes']} of {size} bytes")
    return float(job["bw_bytes"])


def compare(kind: str, path: str, args: argparse.Namespace) -> bool:
    """Both tools `repeat` rounds, alternating who goes first; whether the goal is met."""
    def side(fn):
        def run() -> float:
            if kind == "write" and os.path.exists(path):
                os.unlink(path)        # both writers start from no file
            os.sync()                  # nobody pays for the previous run's writeback
            return fn(kind, path, args.size, args.block, args.cached) / MIB
        return run
    rounds = alternate({"manybench": side(ours), "fio": side(fio)}, args.repeat, args.warmup,
                       harness.show_round(kind, "MiB/s"))
    return verdict(Goal(f"io.{kind} / fio", GOAL), rounds["manybench"], rounds["fio"], "MiB/s")


[AFFINITY] = harness.slot_affinity(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", help="directory to work in (default: a temp dir under "
                                           "/var/tmp, removed afterwards)")
    ap.add_argument("--size", default="1GiB", type=parse_size)
    ap.add_argument("--block", default="1MiB", type=parse_size)
    ap.add_argument("--repeat", default=7, type=int)
    ap.add_argument("--warmup", default=1, type=int, help="uncounted rounds first")
    ap.add_argument("--cached", action="store_true",
                    help="read from the page cache instead of dropping it before the reads")
    args = ap.parse_args()
    if not shutil.which("fio"):
        print("fio is not installed: nothing to compare with", file=sys.stderr)
        return 2
    harness.pin_self(AFFINITY)   # io.* run in this process, as in a pinned slot
    made = args.dir is None
    d = tempfile.mkdtemp(prefix="manybench-bench-io-", dir="/var/tmp") if made else args.dir
    path = os.path.join(d, "bench-io.dat")
    read_mode = "both from the page cache" if args.cached else \
        "cache dropped before each (posix_fadvise DONTNEED) for both"
    print(f"1 slot, {format_size(args.size)} in {format_size(args.block)} blocks on {d}; "
          f"writes end with fsync (fio end_fsync=1); reads: {read_mode}", flush=True)
    try:
        ok = [compare(kind, path, args) for kind in ("write", "read")]
    finally:
        if made:
            shutil.rmtree(d, ignore_errors=True)
        elif os.path.exists(path):
            os.unlink(path)
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
