#!/usr/bin/env python3
"""io.write and io.read agree with fio and IOR on the same work, measured in the same run.

    python benchmarks/bench_io.py [DIR] [--size 1GiB] [--block 1MiB] [--slots 1,2] [--rounds 7]
                                  [--warmup 1] [--quiet 1] [--no-defaults]

Each slot writes then reads its own file of `size` in `block` calls; writes end with an
fsync inside the timed window. manybench runs the plan through its command line (slots
pinned as placed; its results directory on tmpfs where there is one) and its figure is
the aggregate bandwidth it reports: sum(bytes) / (last end - first start). Against:
  fio   the same job in the same window: --rw=write|read --bs=block --ioengine=psync (fio's
        sync default) --end_fsync=1 for writes; for reads the file's cached pages are dropped
        before fio starts (fsync, posix_fadvise DONTNEED, as io.read's prepare does) and fio
        runs with --invalidate=0. fio's own drop (invalidate=1, its default) runs after its
        clock starts (backend.c, io_u.c -> ioengines.c file_invalidate_cache): traced, 54-61
        ms of a 1 GiB read's window (docs/fidelity.md); io.read drops before T0. --numjobs=
        slots --group_reporting, pinned as the slots are. fio's bw. Gated.
  fio's defaults (unless --no-defaults), beside, not gated: the same read and write with
        fio's default block (4 KiB) and, for reads, its default invalidate=1: its drop inside
        its window, 4 KiB calls against io.read's `block`.
  IOR   (when the IOR variable or PATH names an ior) -a POSIX -F -e -w -r -C with
        mpirun -np slots, task r pinned (taskset) to slot r's cpus: file per process, fsync
        after the writes, each task reading another task's file. IOR reads what the node
        just wrote (it drops no cache), so manybench's read here is cache = "keep" with
        reorder = true. IOR's Mean(MiB).
After an uncounted warm-up round, rounds alternate the sides' order; before each side the
previous side's files are removed and settle.py syncs, waits until write-back and the
disk are idle for `quiet` seconds, then `host-settle` more for the host's write-back that
the guest cannot see (run back to back, the order swung pairs 0.2-4.7x on a
discard-mounted virtio disk: the write-back of the side before). A round runs both the write
and the read of each side. First, per slot count, the work counters (work.py: device bytes
from the I/O accounting of each side's processes, file system calls by size from strace -f),
manybench beside fio (manybench's results directory on tmpfs, so its store's writes are not
the device's). Gate against fio, the agreement rule: the same calls per item and device bytes
(within 5%) and the 95% interval of the median of the paired ratios (manybench / fio)
inside 0.95-1.05 (harness.agreement), for each operation and slot count; best-of-N beside it. fio's
defaults and IOR's ratios are printed for information. Exit status 1 when the rule fails, 2
when fio is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

import harness
import work
from harness import agreement, alternate, info
from settle import AFTER, settle

from manybench.parsers import PARSERS
from manybench.units import format_size, parse_size

MIB = 2**20
DEFAULTS = "fio defaults"
# how fio's defaults' window differs from io.read's and io.write's, said beside their ratio
WINDOWS = {"read": "4 KiB calls; fio's cache drop inside its window, io.read's before T0",
           "write": "4 KiB calls; the same window"}


def plan_text(d: str, slots: int, size: int, block: int, for_ior: bool) -> str:
    read = 'cache = "keep"\nreorder = true\n' if for_ior else ""
    write = "fallocate = false\n" if for_ior else ""     # IOR preallocates nothing
    return f"""
scratch = "{d}"
noise = 0
[placement]
workers = {slots}
[[task]]
name = "write"
kernel = "io.write"
size = {size}
block = {block}
{write}
[[task]]
name = "read"
kernel = "io.read"
size = {size}
block = {block}
{read}"""


def results_under(base: str) -> str:
    """Where manybench's results go: tmpfs where there is one, so that its store's writes
    (records, progress samples) are not on the device the tasks measure."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else base


def manybench(d: str, slots: int, size: int, block: int, for_ior: bool) -> dict[str, float]:
    """MiB/s of the write task and the read task of one run."""
    rows = harness.run_plan(plan_text(d, slots, size, block, for_ior),
                            under=results_under(os.path.dirname(d)))
    return {k: harness.aggregate_rate(rows, k) / MIB for k in ("write", "read")}


def fio_cmd(d: str, slots: int, size: int, block: int | None, kind: str,
            invalidate: bool = False) -> list[str]:
    """fio's job for one kind; block None: fio's default (4 KiB); invalidate: fio drops the
    cache itself, inside its window (its default), else the caller dropped it before."""
    # job i on slot i's cpu (pin = core: one cpu each), as the slots are
    cpus = ",".join(harness.cpulist(a) for a in harness.slot_affinity(slots))
    cmd = ["fio", "--name=bench", f"--directory={d}", "--filename_format=fio.$jobnum",
           f"--rw={kind}", f"--size={size}", "--ioengine=psync",
           f"--numjobs={slots}", "--group_reporting", "--output-format=json",
           f"--cpus_allowed={cpus}", "--cpus_allowed_policy=split"]
    cmd += [f"--bs={block}"] if block else []
    return cmd + (["--end_fsync=1"] if kind == "write" else
                  [f"--invalidate={int(invalidate)}"])


def drop_cache(d: str, slots: int) -> None:
    """fio's files' cached pages dropped as io.read's prepare drops its own, before T0."""
    for job in range(slots):
        fd = os.open(os.path.join(d, f"fio.{job}"), os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def fio(d: str, slots: int, size: int, block: int | None, defaults: bool = False
        ) -> dict[str, float]:
    """MiB/s of fio's write then read. Not `defaults`: the read's drop before fio starts
    (the window io.read times); `defaults`: fio's own drop, inside its window."""
    out = {}
    for kind in ("write", "read"):
        if kind == "read" and not defaults:
            drop_cache(d, slots)
        p = subprocess.run(fio_cmd(d, slots, size, block, kind, invalidate=defaults),
                           capture_output=True, text=True)
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


def work_pass(base: str, slots: int, size: int, block: int) -> dict[str, list[str]]:
    """Each side once more under the work counters (work.py), side by side: manybench's
    write task alone, then write and read (the read's work is the difference: it reads what
    the write left, as fio's read job reads its write job's file), against fio's two jobs.
    The differences per kind ([]: the same work). manybench's results directory is on
    tmpfs where there is one, so its store's writes are not counted as the device's."""
    runs: dict[str, work.Work] = {}
    for name, upto in (("write", '[[task]]\nname = "read"'), ("both", None)):
        d = tempfile.mkdtemp(dir=base)
        res = tempfile.mkdtemp(dir=results_under(base))
        text = plan_text(d, slots, size, block, False)
        plan = os.path.join(res, "plan.toml")
        with open(plan, "w") as f:
            f.write(text[:text.index(upto)] if upto else text)
        runs[name], _ = work.measure([sys.executable, "-m", "manybench", "run", plan, "-o",
                                      res, "-q"], d, harness.ENV)
        shutil.rmtree(res, ignore_errors=True)
    read = work.Work(max(0, runs["both"].device_read - runs["write"].device_read),
                     max(0, runs["both"].device_write - runs["write"].device_write),
                     runs["both"].calls - runs["write"].calls)
    ours = {"write": runs["write"], "read": read}
    fd = tempfile.mkdtemp(dir=base)
    theirs = {}
    for kind in ("write", "read"):
        if kind == "read":
            drop_cache(fd, slots)    # before fio's window, as the gated runs do
        theirs[kind] = work.measure(fio_cmd(fd, slots, size, block, kind), fd)[0]
    out: dict[str, list[str]] = {}
    for kind in ("write", "read"):
        a, b = _folded(ours[kind]), _folded(theirs[kind])
        print(f"  work of io.{kind}, {slots} slot(s): manybench {a.line()}")
        print(f"  work of io.{kind}, {slots} slot(s): fio       {b.line()}")
        diffs = work.agree(a, b, ITEM_CALLS[kind], device=(kind,))
        print(f"io.{kind}, {slots} slot(s): work " + (
            f"agrees with fio: the same {', '.join(ITEM_CALLS[kind])} calls and sizes, the "
            f"same bytes {'written to' if kind == 'write' else 'read from'} the device"
            if not diffs else "DIFFERS from fio: " + "; ".join(diffs)))
        other = [d for d in work.agree(a, b) if d not in diffs
                 and not d.startswith(_BOOKKEEPING)]
        if other:     # before T0, bookkeeping, a cold program's pages: shown, not gated
            print(f"  io.{kind}, {slots} slot(s): besides the items: " + "; ".join(other))
        out[kind] = diffs
    return out


# the calls that are the work of each item (plain and positioned calls folded together);
# the rest (fadvise, opens, stats) happens before T0 or around the run
ITEM_CALLS = {"write": ("write", "fsync", "fdatasync", "fallocate"), "read": ("read",)}
_BOOKKEEPING = ("close", "mkdir", "rmdir", "newfstatat", "openat", "unlink", "lseek",
                "statx", "fstat")


def _folded(w: work.Work) -> work.Work:
    """read/pread64 and write/pwrite64 of one size are the same work: counted as one."""
    fold = {"pread64": "read", "pwrite64": "write"}
    calls: Counter = Counter()
    for (name, arg), n in w.calls.items():
        calls[(fold.get(name, name), arg)] += n
    return work.Work(w.device_read, w.device_write, calls)


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
    ap.add_argument("--rounds", default=7, type=int)
    ap.add_argument("--warmup", default=1, type=int, help="uncounted rounds first")
    ap.add_argument("--quiet", default=1.0, type=float,
                    help="seconds of idle write-back and disk before each side (settle.py)")
    ap.add_argument("--host-settle", default=AFTER, type=float,
                    help="seconds more for the host's write-back, which the guest cannot see")
    ap.add_argument("--no-defaults", dest="defaults", action="store_false",
                    help="skip fio with its defaults (4 KiB calls, its drop inside its window)")
    ap.add_argument("--no-work", dest="work", action="store_false",
                    help="skip the work counters (device bytes, system calls per item)")
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
            diffs: dict[str, list[str] | None] = {"write": None, "read": None}
            if args.work and work.strace():
                diffs.update(work_pass(base, slots, args.size, args.block))
            elif args.work:
                print("work counters: strace is not installed (Debian package strace)")
            for peer in ["fio"] + (["IOR"] if ior_exe else []):
                def side(who: str):
                    def run() -> dict[str, float]:
                        # the sides before removed their files: their write-back, their
                        # discards done before this side starts
                        print(f"    before {who}: "
                              f"{settle(base, args.quiet, after=args.host_settle)}", flush=True)
                        d = tempfile.mkdtemp(dir=base)
                        if who == "manybench":
                            r = manybench(d, slots, args.size, args.block, peer == "IOR")
                        elif who == "fio":
                            r = fio(d, slots, args.size, args.block)
                        elif who == DEFAULTS:
                            r = fio(d, slots, args.size, None, defaults=True)
                        else:
                            r = ior(ior_exe, d, slots, args.size, args.block)
                        shutil.rmtree(d, ignore_errors=True)
                        return r
                    return run
                names = ["manybench", peer] + ([DEFAULTS] if peer == "fio" and args.defaults
                                               else [])
                runs = alternate({n: side(n) for n in names}, args.rounds, args.warmup,
                                 show(f"{slots} slot(s) vs {peer}"))
                for kind in ("write", "read"):
                    name = f"io.{kind}, {slots} slot(s) / {peer}"
                    ours, theirs = ([r[kind] for r in runs[w]] for w in ("manybench", peer))
                    if peer == "fio":    # the reference whose work is counted: gated
                        ok &= agreement(name + " (the same window)", ours, theirs, "MiB/s",
                                        diffs[kind], ", ".join(ITEM_CALLS[kind]) +
                                        " calls and sizes, device bytes")
                    else:
                        info(name, ours, theirs, "MiB/s")
                    if DEFAULTS in runs:
                        info(f"io.{kind}, {slots} slot(s) / {DEFAULTS} ({WINDOWS[kind]})",
                             ours, [r[kind] for r in runs[DEFAULTS]], "MiB/s")
    finally:
        shutil.rmtree(base, ignore_errors=True)    # our temp dir only, never DIR itself
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
