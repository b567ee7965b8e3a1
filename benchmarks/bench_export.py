#!/usr/bin/env python3
"""`manybench export` of a large run: peak RSS and CPU of csv, json and parquet at 1,000 x 64
simulated slots and N phases (1,024,000 records at N = 16), and at 4N, against the tree
before the change (issue 30, item 2).

  python benchmarks/bench_export.py                       # 1,000 x 64, 16 and 64 phases
  python benchmarks/bench_export.py --nodes 100 --phases 4 --rounds 2     # a quick look
  python benchmarks/bench_export.py --keep /var/tmp/runs     # the runs made once, then reused

The runs are made once by this tree, `manybench run plan.toml -q --simulate NxS` of null
phases with every slot a worker (bench_sim.py's), N and 4N phases; both trees read the same
results.db. Each export is one `python -m manybench export DIR --format F -o FILE` process:
its CPU (user + system) and peak RSS (ru_maxrss) from wait4, so nothing samples it. At N,
this tree and the tree before (`--before REF`, a git worktree; default int29) alternate
pair by pair, format by format; at 4N only this tree runs by default, since the tree before
holds every record (~3-4 kB each as it exports: 12-17 GB at 4,096,000, more than most
machines lend a benchmark; `--before-4x` runs it too). The partitioned dataset
(`--partition`) is measured at N for information. The machine's load is printed before and
after each pair (CPU time and RSS move little with load; wall time does).

Goals (issue 30): at N x 1,000 x 64 = 1.02 M records, each format's peak RSS <= 300 MB; at
4N, <= 1.1 x its peak at N. CPU and RSS against the tree before are printed as ratios
(this tree / before) for information.
Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from harness import absolute, alternate, fmt, info, machine, write_null_plan
from peer_tree import ROOT, before_tree, drop_tree, env_of

FORMATS = ("csv", "json", "parquet")
RSS_MB = 300.0      # peak RSS at 1.02 M records
GROWTH = 1.1        # peak at 4x the records / at 1x


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def make_run(nodes: int, slots: int, phases: int, keep: str | None) -> str:
    """The run's results directory: made (in `keep` when given), or kept there before."""
    if keep:
        d = os.path.join(keep, f"{nodes}x{slots}x{phases}")
        if os.path.exists(os.path.join(d, "results.db")):
            return d
        os.makedirs(d)
    else:
        d = tempfile.mkdtemp(prefix="mb-export-")
    plan = write_null_plan(d, nodes * slots, phases)
    t = time.monotonic()
    with open(os.path.join(d, "stderr.txt"), "w") as err:
        res = subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", d, "-q",
                              "--simulate", f"{nodes}x{slots}"], env=env_of(ROOT),
                             stdout=subprocess.DEVNULL, stderr=err)
    if res.returncode != 0:
        with open(os.path.join(d, "stderr.txt")) as f:
            sys.exit(f"the run failed (exit {res.returncode}):\n{f.read()[-2000:]}")
    print(f"made {nodes} x {slots} x {phases} phases ({nodes * slots * phases:,} records, "
          f"{os.path.getsize(os.path.join(d, 'results.db')) >> 20} MiB) in "
          f"{time.monotonic() - t:.0f} s", flush=True)
    return d


def export(tree: str, directory: str, fmt_: str, *more: str) -> dict:
    """One export process: its CPU (user + system, s) and peak RSS (MB), from wait4."""
    out = os.path.join(directory, f"out.{fmt_}")
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "manybench", "export", directory,
                              "--format", fmt_, "-o", out, *more], env=env_of(tree),
                             stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        if p.returncode != 0:
            sys.exit(f"export --format {fmt_} {' '.join(more)} failed (exit {p.returncode}) "
                     f"in {tree}:\n{err.read()[-2000:]}")
    shutil.rmtree(out, ignore_errors=True) if os.path.isdir(out) else os.unlink(out)
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}


def show(label: str):
    def line(rnd: int, got: dict) -> None:
        print(f"  {label} round {rnd + 1}: " + "   ".join(
            f"{n} {fmt(v['cpu_s'])} s CPU, {fmt(v['rss_mb'])} MB peak" for n, v in got.items())
            + f"   ({load()})", flush=True)
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--phases", type=int, default=16, help="N: runs of N and 4N phases")
    ap.add_argument("--rounds", type=int, default=1, help="counted pairs at N")
    ap.add_argument("--before", default="int29", help="git ref of the peer tree ('' = none)")
    ap.add_argument("--before-4x", action="store_true",
                    help="run the tree before at 4N too (it holds every record)")
    ap.add_argument("--keep", help="make (or reuse) the runs in this directory, kept")
    a = ap.parse_args()
    print(machine(), flush=True)
    print(load(), flush=True)
    n = a.nodes * a.slots * a.phases
    trees = {"this tree": ROOT}
    made = before_tree(a.before) if a.before else None
    if made:
        trees["before"] = made
    runs = [make_run(a.nodes, a.slots, p, a.keep) for p in (a.phases, 4 * a.phases)]
    ok = True
    try:
        at_n, at_4n = {}, {}
        for f in FORMATS:
            at_n[f] = alternate({name: (lambda t=t, f=f: export(t, runs[0], f))
                                 for name, t in trees.items()}, a.rounds, 0,
                                show(f"{f} at {n:,} records"))
        part = export(ROOT, runs[0], "parquet", "--partition")
        print(f"  parquet --partition at {n:,} records: this tree {fmt(part['cpu_s'])} s CPU, "
              f"{fmt(part['rss_mb'])} MB peak (for information)", flush=True)
        for f in FORMATS:
            sides = trees if a.before_4x else {"this tree": ROOT}
            at_4n[f] = alternate({name: (lambda t=t, f=f: export(t, runs[1], f))
                                  for name, t in sides.items()}, 1, 0,
                                 show(f"{f} at {4 * n:,} records"))
    finally:
        if made:
            drop_tree(made)
        for d in runs if not a.keep else ():
            shutil.rmtree(d, ignore_errors=True)
    print(load(), flush=True)
    for f in FORMATS:
        ours = at_n[f]["this tree"]
        peak = min(g["rss_mb"] for g in ours)
        before = at_n[f].get("before")
        if before:
            for what, key, unit in (("CPU", "cpu_s", "s"), ("peak RSS", "rss_mb", "MB")):
                info(f"export --format {f} at {n:,} records, {what}, this tree / before",
                     [g[key] for g in ours], [g[key] for g in before], unit, "lower")
        beside = f"before {fmt(min(g['rss_mb'] for g in before))} MB" if before else ""
        ok &= absolute(f"export --format {f} at {n:,} records, peak RSS", peak, RSS_MB, "MB",
                       beside=beside)
        four = at_4n[f]["this tree"][0]["rss_mb"]
        ok &= absolute(f"export --format {f}, peak RSS at {4 * n:,} records / at {n:,}",
                       four / peak, GROWTH, "x",
                       beside=f"{fmt(four)} MB; CPU {fmt(at_4n[f]['this tree'][0]['cpu_s'])} s "
                              f"(at {n:,}: {fmt(min(g['cpu_s'] for g in ours))} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
