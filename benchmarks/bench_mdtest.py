#!/usr/bin/env python3
"""meta.* agree with mdtest on the same items, measured in the same run.

    MDTEST=/path/to/mdtest python benchmarks/bench_mdtest.py [--items 10000] [--tasks 1,2]
                                    [--dirs /var/tmp,/dev/shm] [--rounds 5] [--warmup 1]

mdtest (from the MDTEST variable or PATH; build it from hpc/ior) runs with mpirun -np tasks,
task r pinned (taskset) to the cpus of manybench's slot r: `-D -n items` (directory
creation, stat, rename, removal) and `-F -n items` (file creation, stat, read, removal), in a
fresh directory. manybench runs the same phases through its command line, workers = tasks,
in mdtest's layout (one shared tree, the same names, full paths): meta.mkdir, statdir,
rename, rmdir and meta.create, stat, read, unlink; its figure for each is the aggregate
ops/s it reports (sum(ops) / (last end - first start)); mdtest's is its SUMMARY rate's mean.
The same phases with at = true (relative *at calls, no path walk) are printed beside them,
for information: not what mdtest measures.

After an uncounted warm-up round, rounds alternate which tool goes first, each run in a
fresh directory. Then each side once more under the work counters (work.py: strace -ff of
every call on a path in the directory), printed side by side as calls per item. Gate, the
agreement rule, for mkdir, statdir, rmdir, create, stat and unlink on every directory and
task count: the same calls per item (within 0.01) and the 95% interval of the median of the
paired ratios (manybench / mdtest) inside 0.95-1.05 (harness.agreement); rename and read, and every
at = true ratio, printed for information, not gated. Exit status 1 when the rule fails, 2
when mdtest is missing. stat and statdir are expected to fail it at 1.10-1.18 with the same
calls: mdtest's own work per item (two PATH_MAX memsets, three sprintfs, two clock reads)
weighs on the cheapest call; docs/fidelity.md gives the instruction counts and the run against
an mdtest without them.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import harness
from harness import agreement, alternate, info
import work

from manybench.parsers import PARSERS

# manybench task -> mdtest metric
PHASES = {"mkdir": "dir_create_ops_s", "statdir": "dir_stat_ops_s",
          "rename": "dir_rename_ops_s", "rmdir": "dir_remove_ops_s",
          "create": "file_create_ops_s", "stat": "file_stat_ops_s",
          "read": "file_read_ops_s", "unlink": "file_remove_ops_s"}
GATED = ("mkdir", "statdir", "rmdir", "create", "stat", "unlink")


def manybench(d: str, tasks: int, items: int, at: bool) -> dict[str, float]:
    plan = f'scratch = "{d}"\n[placement]\nworkers = {tasks}\n' + "".join(
        f'[[task]]\nname = "{op}"\nkernel = "meta.{op}"\nitems = {items}\n'
        f'at = {"true" if at else "false"}\n' for op in PHASES)
    rows = harness.run_plan(plan)
    return {op: harness.aggregate_rate(rows, op, "ops") for op in PHASES}


# the calls every item of a phase makes (strace names; glibc's stat is newfstatat or statx)
# (work.py counts a *at call from the current directory with a full path as the plain call)
ITEM_CALLS = ("mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "stat", "newfstatat",
              "statx", "open", "openat", "creat", "rename", "renameat", "close", "read")


# mdtest's -D and -F runs, and manybench's phases that do the same
GROUPS = {"-D": ("mkdir", "statdir", "rename", "rmdir"), "-F": ("create", "stat", "read",
                                                               "unlink")}


def _windows(res: str, tasks: tuple[str, ...]) -> list[tuple[float, float]]:
    """The timed windows (epoch s) of these tasks' records in a results directory."""
    import sqlite3
    con = sqlite3.connect(os.path.join(res, "results.db"))
    try:
        rows = con.execute(f"SELECT start_ns, end_ns FROM records WHERE task IN "
                           f"({','.join('?' * len(tasks))})", tasks).fetchall()
    finally:
        con.close()
    return [(a / 1e9, b / 1e9) for a, b in rows]


def counted(exe: str, where: str, tasks: int, items: int) -> list[str] | None:
    """Each side once under strace -ttt: manybench's calls inside its phases' timed windows
    (not the untimed prepare that lays each phase's items out), mdtest's whole -D and -F
    runs; calls per item side by side, per group; the differences."""
    if not work.strace():
        print("  work: strace not installed: not measured", flush=True)
        return None
    d = tempfile.mkdtemp(prefix="mb-bench-md-", dir=where)
    try:
        os.makedirs(os.path.join(d, "s"))
        plan, res = os.path.join(d, "plan.toml"), os.path.join(d, "res")
        with open(plan, "w") as f:
            f.write(f'scratch = "{d}/s"\nnoise = 0\n[placement]\nworkers = {tasks}\n' + "".join(
                f'[[task]]\nname = "{op}"\nkernel = "meta.{op}"\nitems = {items}\n'
                for op in PHASES))
        ours = work.traced([sys.executable, "-m", "manybench", "run", plan, "-o", res, "-q"],
                           os.path.join(d, "s"), env=harness.ENV)
        diffs: list[str] = []
        total = items * tasks
        for flag, ops in GROUPS.items():
            a = work.counted(ours, os.path.join(d, "s"), _windows(res, ops))
            md = os.path.join(d, "m" + flag)
            os.makedirs(md)
            b = work.counted(work.traced([*harness.mpirun_pinned(
                harness.slot_affinity(tasks)), exe, flag, "-n", str(items), "-d", md], md), md)
            pa, pb = work.per_item(a, total), work.per_item(b, total)
            print(f"  work per item, mdtest {flag} vs {', '.join(ops)} ({total} items each): "
                  + "; ".join(f"{n} {pa.get(n, 0):.3f} vs {pb.get(n, 0):.3f}"
                              for n in ITEM_CALLS if pa.get(n) or pb.get(n)), flush=True)
            diffs += [f"{flag} {x}" for x in work.agree_per_item(a, b, total, ITEM_CALLS)]
        return diffs
    finally:
        shutil.rmtree(d, ignore_errors=True)


def mdtest(exe: str, d: str, tasks: int, items: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for flag in ("-D", "-F"):
        p = subprocess.run([*harness.mpirun_pinned(harness.slot_affinity(tasks)), exe, flag,
                            "-n", str(items), "-d", f"{d}/md{flag}"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"mdtest failed: {p.stderr.strip() or p.stdout.strip()}")
        m = PARSERS["mdtest"](p.stdout, p.stderr)
        out.update({op: m[key] for op, key in PHASES.items() if key in m})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10000, help="items per task")
    ap.add_argument("--tasks", default="1,2")
    ap.add_argument("--dirs", default="/var/tmp,/dev/shm",
                    help="file systems to run on (ext4 and tmpfs here)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    exe = harness.tool("mdtest", "MDTEST")
    if exe is None:
        print("mdtest: no mdtest in $MDTEST or on PATH (build it from hpc/ior): nothing to "
              "compare with", file=sys.stderr)
        return 2
    ok = True
    for where in args.dirs.split(","):
        for tasks in (int(t) for t in args.tasks.split(",")):
            def side(who: str):
                def run() -> dict[str, float]:
                    d = tempfile.mkdtemp(prefix="mb-bench-md-", dir=where)
                    os.sync()
                    r = manybench(d, tasks, args.items, who == "at") if who != "mdtest" \
                        else mdtest(exe, d, tasks, args.items)
                    shutil.rmtree(d, ignore_errors=True)
                    return r
                return run
            runs = alternate({"manybench": side("manybench"), "mdtest": side("mdtest"),
                              "at": side("at")}, args.rounds, args.warmup,
                             harness.show_round(f"{where}, {tasks} task(s), mkdir", "ops/s",
                                                key=lambda r: r["mkdir"]))
            diffs = counted(exe, where, tasks, args.items)
            for op in PHASES:
                ours, theirs, at = ([r[op] for r in runs[who]]
                                    for who in ("manybench", "mdtest", "at"))
                name = f"meta.{op} on {where}, {tasks} task(s) / mdtest"
                if op in GATED:
                    ok &= agreement(name, ours, theirs, "ops/s", diffs,
                                    "calls per item: " + ", ".join(ITEM_CALLS[:6]) + "...")
                else:
                    info(name, ours, theirs, "ops/s")
                info(f"    meta.{op} at = true / mdtest (not mdtest's path walk)", at, theirs,
                     "ops/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
