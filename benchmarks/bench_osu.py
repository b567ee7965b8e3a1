#!/usr/bin/env python3
"""mbmpi against the OSU micro-benchmarks 7.x, per test and message size, in the same run.

    python benchmarks/bench_osu.py --osu DIR [--rounds 5] [--warmup 1] [--sizes 1:1048576]
                                   [--tests latency,bw,...] [--counts-only] [--table]
    python benchmarks/bench_osu.py --osu DIR --record tests/fixtures/osu/counts-7.4.json

DIR (or $OSU_SOURCE) is an OSU micro-benchmarks 7.x source tree (the public release's
tarball, or a mirror of it), never built in: it is configured and built in a directory of
its own under the temporary directory, by one builder at a time (a copy of the tree, `make
distclean`ed when it was configured in place, which autotools cannot configure again out of
tree) with Open MPI's wrappers (mpicc.openmpi, mpicxx.openmpi) and CFLAGS="-O2
-DFLOAT_PRECISION=3": OSU prints latencies with FLOAT_PRECISION decimals (c/util/osu_util.h,
2 unless defined), a 0.01 us step that is 8% of a 0.12 us bcast; mbmpi prints 3. The
counting runs check that OSU's rows came out with 3 decimals and say so when not. Without
DIR the benchmark says so and exits 2. OSU's code stays out of this repository: only its
outputs are kept (tests/fixtures/osu/).

Both sides run under Open MPI's mpirun.openmpi as 2 ranks on this machine, rank r pinned to
the cpus slot r of a 2-worker phase gets (harness.mpirun_pinned), with their default
iterations and warm-up, sizes MIN:MAX given to both with -m:

  mbmpi       latency bw bibw bcast allreduce alltoall (`manybench mpi-build --family openmpi`)
  OSU         osu_latency osu_bw osu_bibw osu_bcast osu_allreduce -T mpi_float osu_alltoall

Work, first: each pair once more with mpicount.c preloaded (benchmarks/mpicount.py): per rank
and (call, bytes), the calls, those inside the timer, the distinct buffers and the pages
beyond the message already resident at the first call (the first touch), plus the barriers
right after a timer closed. Equal counters mean the same window, iterations, warm-up,
buffers, first touch and per-call timing; noise cannot move them.
Then, per test, rounds of one run of each side, the first an uncounted warm-up, alternating
which goes first; per size, the agreement rule (harness.agreement): the same work and the
95% interval of the median of the paired ratios (mbmpi / OSU: MB/s for bw and bibw, us for
the others) inside 0.95-1.05 (harness.agreement); then per test how many sizes have their median ratio
within 0.95-1.05. The goal (issue 31) is every size within 0.95-1.05 on a quiet machine; the
load (1-minute load average) is printed before every test and with every pair: on a shared
machine the ratios scatter, the counters do not. Exit status 1 when a size fails the rule.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import harness
import mpicount
from harness import agreement, alternate

from manybench.kernels.mpi_program import MpiBuildError, build

FAMILY, MPIRUN, MPICC, MPICXX = "openmpi", "mpirun.openmpi", "mpicc.openmpi", "mpicxx.openmpi"
UNITS = {"bw": "MB/s", "bibw": "MB/s"}     # the others: us
GOAL = harness.Goal("mbmpi / OSU", 0.95, upper=1.05)
# the directories holding the programs compared (their Makefiles build c/util's objects)
BUILT = ("c/mpi/pt2pt/standard", "c/mpi/collective/blocking")
_ROW = re.compile(r"^(\d+)\s+([\d.]+)")
# OSU's figures to mbmpi's 3 decimals (FLOAT_PRECISION is #ifndef-guarded in osu_util.h)
DECIMALS = 3
OSU_CFLAGS = f"-O2 -DFLOAT_PRECISION={DECIMALS}"


def osu_version(source: str) -> str:
    """The release in the tree's configure.ac (AC_INIT), or '' when it has none."""
    try:
        with open(os.path.join(source, "configure.ac")) as f:
            m = re.search(r"AC_INIT\(\[OSU-Micro-Benchmarks\],\s*\[([^\]]+)\]", f.read())
    except OSError:
        return ""
    return m.group(1) if m else ""


def osu_build(source: str) -> str:
    """The directory holding c/mpi/... with OSU's programs built with OSU_CFLAGS: a copy of
    `source` of its own, configured in place (a tree already configured in place cannot be
    configured again out of tree: the copy is `make distclean`ed first), reused while its
    configuration stands. One builder at a time (a lock file beside it): a second one removed
    the tree the first was configuring, or ran make in it at once."""
    source = os.path.abspath(source)
    tag = hashlib.sha256(f"{source} {MPICC} {OSU_CFLAGS}".encode()).hexdigest()[:12]
    out = os.path.join(tempfile.gettempdir(), f"manybench-osu-{tag}")
    # (not through a link planted at that name in the shared temporary directory)
    fd = os.open(f"{out}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)      # released when the file closes
        if not os.path.exists(os.path.join(out, "config.status")):
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(source, out, symlinks=True)
            if os.path.exists(os.path.join(out, "config.status")):   # configured in place
                subprocess.run(["make", "distclean"], cwd=out, check=True, capture_output=True)
            subprocess.run(["./configure", f"CC={MPICC}", f"CXX={MPICXX}",
                            f"CFLAGS={OSU_CFLAGS}"], cwd=out, check=True, capture_output=True)
        for sub in BUILT:
            subprocess.run(["make", "-j2", "-C", sub], cwd=out, check=True, capture_output=True)
    return out


def decimals(stdout: str) -> set[int]:
    """The decimals of a table's first figure, over its rows."""
    return {len(m.group(2).partition(".")[2]) for m in map(_ROW.match, stdout.splitlines())
            if m}


def rows(stdout: str) -> dict[int, float]:
    """A table's sizes and first figure (OSU's and mbmpi's tables read the same)."""
    return {int(m.group(1)): float(m.group(2))
            for m in map(_ROW.match, stdout.splitlines()) if m}


def commands(osu: str, exe: str, sizes: str) -> dict[str, tuple[list[str], list[str]]]:
    """test -> (mbmpi's command, OSU's command), both over `sizes`."""
    return {t: ([exe, t, "-m", sizes],
                [os.path.join(osu, "c/mpi", p[0]), *p[1:], "-m", sizes])
            for t, p in mpicount.OSU_PAIRS.items()}


def record(path: str, cmds: dict, lib: str, version: str, sizes: str) -> None:
    """OSU's outputs and counts at `sizes`, as the fixture the tests compare mbmpi with."""
    data = {"osu": version, "mpi": mpi_version(), "sizes": sizes, "tests": {}}
    for test, (_, peer) in cmds.items():
        out, counts = mpicount.run(peer, lib)
        data["tests"][test] = {"command": [os.path.basename(peer[0]), *peer[1:]],
                               "output": out, "counts": mpicount.to_json(counts)}
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print(f"recorded OSU {version}'s counts at {sizes} in {path}")


def mpi_version() -> str:
    done = subprocess.run([MPIRUN, "--version"], capture_output=True, text=True, check=False)
    return (done.stdout.splitlines() or ["?"])[0]


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus"


def show(rnd: int, got: dict[str, dict[int, float]]) -> None:
    """A pair's line: mbmpi / OSU at the smallest and the largest size, and the load."""
    lo, hi = min(got["OSU"]), max(got["OSU"])
    ratios = "   ".join(f"{s} B {harness.rfmt(got['mbmpi'][s] / got['OSU'][s])}"
                        for s in (lo, hi) if got["OSU"][s])
    print(f"  {'warm-up (not counted)' if rnd < 0 else f'round {rnd + 1}'}: mbmpi / OSU "
          f"{ratios}; {load()}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--osu", default=os.environ.get("OSU_SOURCE"),
                    help="OSU micro-benchmarks 7.x source tree (default $OSU_SOURCE)")
    ap.add_argument("--rounds", type=int, default=5, help="counted pairs per test")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    ap.add_argument("--sizes", default="1:1048576", help="MIN:MAX bytes, given to both")
    ap.add_argument("--tests", default=",".join(mpicount.OSU_PAIRS))
    ap.add_argument("--counts-only", action="store_true", help="the counters, no timing")
    ap.add_argument("--table", action="store_true", help="print every counter side by side")
    ap.add_argument("--record", metavar="JSON",
                    help="write OSU's outputs and counts at --sizes (a test fixture), then stop")
    args = ap.parse_args()
    tests = args.tests.split(",")
    if not re.fullmatch(r"[1-9]\d*:[1-9]\d*", args.sizes) or \
            int(args.sizes.split(":")[0]) > int(args.sizes.split(":")[1]):
        print(f"--sizes: MIN:MAX in bytes, 1 <= MIN <= MAX, not {args.sizes!r}", file=sys.stderr)
        return 2
    if unknown := [t for t in tests if t not in mpicount.OSU_PAIRS]:
        print(f"--tests: unknown {', '.join(unknown)} (known: {', '.join(mpicount.OSU_PAIRS)})",
              file=sys.stderr)
        return 2
    if not args.osu or not os.path.isfile(os.path.join(args.osu, "configure.ac")):
        print("skipped: no OSU micro-benchmarks source tree (give --osu DIR or OSU_SOURCE; "
              "the public 7.x release from mvapich.cse.ohio-state.edu or a mirror of it)",
              file=sys.stderr)
        return 2
    version = osu_version(args.osu)
    if not version.startswith("7."):
        print(f"note: OSU {version or '(unknown version)'}, the goal is against 7.x",
              file=sys.stderr)
    try:
        exe = build(FAMILY)
    except MpiBuildError as e:
        print(f"skipped: {e}", file=sys.stderr)
        return 2
    try:
        osu = osu_build(args.osu)
    except subprocess.CalledProcessError as e:
        said = ((e.stderr or b"") + (e.stdout or b"")).decode(errors="replace").strip()
        print(f"skipped: OSU in {args.osu} did not build ({' '.join(e.cmd)}):\n"
              f"{said[-2000:]}", file=sys.stderr)
        return 2
    work_dir = tempfile.mkdtemp(prefix="manybench-bench-osu-")
    lib = mpicount.build(MPICC, work_dir)
    cmds = {t: c for t, c in commands(osu, exe, args.sizes).items() if t in tests}
    if args.record:
        record(args.record, cmds, lib, version, args.sizes)
        return 0
    print(f"{harness.machine()}\n{mpi_version()}; OSU {version} from {args.osu}; mbmpi {exe}; "
          f"2 ranks, sizes {args.sizes}; {load()}", flush=True)
    work = {}
    for test, (ours, peer) in cmds.items():
        a, (said, b) = mpicount.run(ours, lib)[1], mpicount.run(peer, lib)
        if decimals(said) != {DECIMALS}:
            print(f"note: {test}: OSU printed {sorted(decimals(said))} decimals, not "
                  f"{DECIMALS}: CFLAGS={OSU_CFLAGS!r} did not take in {osu}", flush=True)
        work[test] = mpicount.differences(a, b)
        print(f"counters {test}: " + ("equal" if not work[test] else
                                      "DIFFERENT: " + "; ".join(work[test])), flush=True)
        if args.table:
            print(mpicount.table(a, b), flush=True)
    if args.counts_only:
        return 0 if not any(work.values()) else 1
    launch = harness.mpirun_pinned(harness.slot_affinity(2), MPIRUN)
    ok, met = True, {}
    for test, (ours, peer) in cmds.items():
        unit = UNITS.get(test, "us")
        print(f"\n{test} ({unit}), {load()}:", flush=True)

        def side(cmd: list[str]) -> dict[int, float]:
            done = subprocess.run([*launch, *cmd], capture_output=True, text=True,
                                  timeout=3600, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()[-2000:]}")
            return rows(done.stdout)

        rounds = alternate({"mbmpi": lambda ours=ours: side(ours),
                            "OSU": lambda peer=peer: side(peer)},
                           args.rounds, args.warmup, show)
        within = []
        for size in sorted(rounds["OSU"][0]):
            ours_s, peer_s = [r[size] for r in rounds["mbmpi"]], [r[size] for r in rounds["OSU"]]
            ok &= agreement(f"{test} {size} B mbmpi / OSU", ours_s, peer_s, unit, work[test],
                            "calls, bytes, timed calls, buffers, first touch per rank",
                            "lower" if unit == "us" else "higher")
            if GOAL.met(statistics.median(harness.paired(ours_s, peer_s))):
                within.append(size)
        sizes = len(rounds["OSU"][0])
        met[test] = (len(within), sizes)
        print(f"{test}: median ratio {GOAL.text()} at {len(within)} of {sizes} sizes; "
              f"{load()}", flush=True)
    print("\ngoal (issue 31): every size's median ratio within 0.95-1.05 of OSU on a quiet "
          "machine, counters equal; this run: " + ", ".join(
              f"{t} {n}/{m}" for t, (n, m) in met.items()) + f" sizes within; {load()}",
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
