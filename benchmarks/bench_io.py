#!/usr/bin/env python3
"""io.write and io.read agree with fio and IOR on the same work, measured in the same run.

    python benchmarks/bench_io.py [DIR] [--size 1GiB] [--block 1MiB] [--slots 1,2] [--rounds 5]
                                  [--warmup 1]

Each slot writes then reads its own file of `size` in `block` calls; writes end with an
fsync inside the timed window. manybench runs the plan through its command line (slots
pinned as placed) and its figure is the aggregate bandwidth it reports: sum(bytes) / (last
end - first start). Against:
  fio   the same job with fio's defaults: --rw=write|read --ioengine=psync (fio's sync
        default) --end_fsync=1 for writes, invalidate=1 (fio's default) for reads, so both
        drop the file's cached pages before reading; --numjobs=slots --group_reporting,
        pinned as the slots are. fio's bw.
  IOR   (when the IOR variable or PATH names an ior) -a POSIX -F -e -w -r -C with
        mpirun -np slots, task r pinned (taskset) to slot r's cpus: file per process, fsync
        after the writes, each task reading another task's file. IOR reads what the node
        just wrote (it drops no cache), so manybench's read here is cache = "keep" with
        reorder = true. IOR's Mean(MiB).
After an uncounted warm-up round, rounds alternate which tool goes first, with a sync before
each run; a round runs both the write and the read of each tool. Gate: the median of the
paired ratios (manybench / peer) within 0.95-1.05 for each operation, slot count and peer;
best-of-N beside it. Exit status 1 when a goal is missed, 2 when fio is missing.
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

from manybench.parsers import PARSERS
from manybench.units import format_size, parse_size

LOW, HIGH = 0.95, 1.05
MIB = 2**20


def manybench(d: str, slots: int, size: int, block: int, for_ior: bool) -> dict[str, float]:
    """MiB/s of the write task and the read task of one run."""
    read = 'cache = "keep"\nreorder = true\n' if for_ior else ""
    rows = harness.run_plan(f"""
scratch = "{d}"
[placement]
workers = {slots}
[[task]]
name = "write"
kernel = "io.write"
size = {size}
block = {block}
[[task]]
name = "read"
kernel = "io.read"
size = {size}
block = {block}
{read}""")
    return {k: harness.aggregate_rate(rows, k) / MIB for k in ("write", "read")}


def fio(d: str, slots: int, size: int, block: int) -> dict[str, float]:
    out = {}
    # job i on slot i's cpu (pin = core: one cpu each), as the slots are
    cpus = ",".join(harness.cpulist(a) for a in harness.slot_affinity(slots))
    for kind in ("write", "read"):
        cmd = ["fio", "--name=bench", f"--directory={d}", "--filename_format=fio.$jobnum",
               f"--rw={kind}", f"--bs={block}", f"--size={size}", "--ioengine=psync",
               f"--numjobs={slots}", "--group_reporting", "--output-format=json",
               f"--cpus_allowed={cpus}", "--cpus_allowed_policy=split"]
        if kind == "write":
            cmd += ["--end_fsync=1"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"fio failed: {p.stderr.strip() or p.stdout.strip()}")
        job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0][kind]
        out[kind] = job["bw_bytes"] / MIB
    return out


def ior(exe: str, d: str, slots: int, size: int, block: int) -> dict[str, float]:
    cmd = [*harness.mpirun_pinned(harness.slot_affinity(slots)), exe, "-a", "POSIX", "-F",
           "-e", "-w", "-r", "-C",
           "-b", str(size), "-t", str(block), "-o", os.path.join(d, "ior.dat")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"ior failed: {p.stderr.strip() or p.stdout.strip()}")
    m = PARSERS["ior"](p.stdout, p.stderr)
    return {"write": m["write_mean_mib_s"], "read": m["read_mean_mib_s"]}


def show(label: str):
    """One line per round: both figures of every tool, in the order they ran."""
    def line(rnd: int, got: dict[str, dict[str, float]]) -> None:
        what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
        print(f"  {label} {what}: " + "   ".join(
            f"{who} write {harness.fmt(r['write'])} read {harness.fmt(r['read'])} MiB/s"
            for who, r in got.items()), flush=True)
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", help="directory to work in (default: a temp dir under "
                                           "/var/tmp, removed afterwards)")
    ap.add_argument("--size", default="1GiB", type=parse_size)
    ap.add_argument("--block", default="1MiB", type=parse_size)
    ap.add_argument("--slots", default="1,2")
    ap.add_argument("--rounds", default=5, type=int)
    ap.add_argument("--warmup", default=1, type=int, help="uncounted rounds first")
    args = ap.parse_args()
    if not shutil.which("fio"):
        print("fio is not installed (Debian package fio): nothing to compare with",
              file=sys.stderr)
        return 2
    ior_exe = harness.tool("ior", "IOR")
    if ior_exe is None:
        print("IOR: no ior in $IOR or on PATH (build it from hpc/ior): compared with fio only",
              flush=True)
    base = tempfile.mkdtemp(prefix="manybench-bench-io-", dir=args.dir or "/var/tmp")
    print(f"{format_size(args.size)} per slot in {format_size(args.block)} blocks under "
          f"{base}; writes end with fsync", flush=True)
    ok = True
    try:
        for slots in (int(x) for x in args.slots.split(",")):
            for peer in ["fio"] + (["IOR"] if ior_exe else []):
                def side(who: str):
                    def run() -> dict[str, float]:
                        d = tempfile.mkdtemp(dir=base)
                        os.sync()       # nobody pays for the previous run's writeback
                        if who == "manybench":
                            r = manybench(d, slots, args.size, args.block, peer == "IOR")
                        elif who == "fio":
                            r = fio(d, slots, args.size, args.block)
                        else:
                            r = ior(ior_exe, d, slots, args.size, args.block)
                        shutil.rmtree(d, ignore_errors=True)
                        return r
                    return run
                runs = alternate({"manybench": side("manybench"), peer: side(peer)},
                                 args.rounds, args.warmup, show(f"{slots} slot(s) vs {peer}"))
                for kind in ("write", "read"):
                    ok &= verdict(Goal(f"io.{kind}, {slots} slot(s) / {peer}", LOW, upper=HIGH),
                                  [r[kind] for r in runs["manybench"]],
                                  [r[kind] for r in runs[peer]], "MiB/s")
    finally:
        shutil.rmtree(base, ignore_errors=True)    # our temp dir only, never DIR itself
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
