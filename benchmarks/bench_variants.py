#!/usr/bin/env python3
"""Binding and wrapping add nothing inside the timed window: null-phase skew and io.write
bandwidth of a bound and of a wrapped variant against the plain one, in the same runs.

    python benchmarks/bench_variants.py [--rounds 5] [--warmup 1] [--repeat 5]
                                        [--size 64MiB] [--no-ch-run]

Each round is one `manybench run` of a plan with the variants side by side: plain (no
variant change), bound (bind = "core"), wrap-env (wrap = ["env", "--"]) and, when ch-run and
/bin/busybox are present, wrap-ch-run (Charliecloud, an image directory of busybox built
here, scratch bound). Variants and repeats interleave within the run (A B C A B C ...); the
variants' order is reversed from round to round, so none always follows the same one. Tasks:
  null      2 slots, `repeat` phases per variant: skew = last start - first start per phase,
            the round's figure its median over the phases
  io.write  1 slot, `size` in 1 MiB blocks with the final fsync: aggregate bandwidth per
            phase (bytes / window), the round's figure its median over the phases
Gates, on the median over rounds of the paired (same round) figures:
  io.write bandwidth  variant / plain within 0.97-1.03
  null skew           variant - plain <= max(3% of plain's, 1 us) (a skew near zero has no
                      meaningful ratio); the ratio is printed beside it
The wrapped variants' start-up (wrap_startup_s, outside the window) is printed for
information. Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

import harness
from harness import Goal, fmt, info, rfmt, verdict

from manybench.units import parse_size

BUSYBOX = "/bin/busybox"
SKEW_FLOOR_NS = 1000.0   # 1 us: below it a skew difference is clock-read noise


def busybox_image(root: str) -> str:
    """A minimal image directory for ch-run: busybox and the mount points it binds over."""
    for d in ("bin", "tmp", "dev", "proc", "sys", "etc", "home", "mnt", "run", "usr", "var"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    for f in ("passwd", "group", "hosts", "resolv.conf"):
        open(os.path.join(root, "etc", f), "w").close()
    return root


def variants(image: str | None) -> list[tuple[str, str]]:
    out = [("plain", ""), ("bound", 'bind = "core"'), ("wrap-env", 'wrap = ["env", "--"]')]
    if image:
        out.append(("wrap-ch-run", 'wrap = ["ch-run", "-b", "{scratch}", "{image}", "--"]\n'
                                   f'vars = {{ image = "{image}" }}'))
    return out


def plan(d: str, vs: list[tuple[str, str]], repeat: int, size: int) -> str:
    text = f"""
scratch = "{d}"
repeat = {repeat}
[[task]]
name = "sync"
kernel = "null"
workers = [2]
[[task]]
name = "write"
kernel = "io.write"
workers = [1]
size = {size}
block = "1MiB"
"""
    for name, body in vs:
        text += f"[[variant]]\nname = \"{name}\"\n{body}\n"
    return text


def one_round(d: str, vs: list[tuple[str, str]], repeat: int, size: int
              ) -> dict[str, dict[str, float]]:
    """Per variant: skew_ns (median over its null phases), write_mib_s (median over its
    io.write phases) and startup_s (median wrap start-up, 0 when not wrapped)."""
    rows = harness.run_plan(plan(d, vs, repeat, size))
    out: dict[str, dict[str, float]] = {}
    for name, _ in vs:
        mine = [r for r in rows if r["variant"] == name]
        bad = [r["error"] for r in mine if r["status"] != "ok"]
        if bad:
            sys.exit(f"variant {name} failed: {bad[:3]}")
        by = harness.phases(mine)
        skews = [max(r["start_ns"] for r in p) - min(r["start_ns"] for r in p)
                 for p in by.values() if p[0]["task"] == "sync"]
        rates = [harness.aggregate_rate(p, "write") / 2**20
                 for p in by.values() if p[0]["task"] == "write"]
        starts = [r["metrics"].get("wrap_startup_s", 0.0) for r in mine]
        out[name] = {"skew_ns": statistics.median(skews),
                     "write_mib_s": statistics.median(rates),
                     "startup_s": statistics.median(starts)}
    return out


def skew_gate(name: str, ours: list[float], plain: list[float]) -> bool:
    """Paired differences of skew: median(variant - plain) <= max(3% of plain, 1 us)."""
    diffs = [a - b for a, b in zip(ours, plain)]
    med = statistics.median(diffs)
    limit = max(0.03 * statistics.median(plain), SKEW_FLOOR_NS)
    ok = med <= limit
    print(f"null skew, {name} - plain = {fmt(med / 1e3)} us median of {len(diffs)} paired "
          f"differences (goal <= {fmt(limit / 1e3)} us: max(3% of plain, 1 us)) "
          f"{'PASS' if ok else 'FAIL'}; skews {fmt(statistics.median(ours) / 1e3)} vs "
          f"{fmt(statistics.median(plain) / 1e3)} us; pairs "
          + " ".join(fmt(x / 1e3) for x in diffs), flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="counted rounds (manybench runs)")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    ap.add_argument("--repeat", type=int, default=5, help="phases per task and variant a round")
    ap.add_argument("--size", default="64MiB", help="io.write bytes per phase")
    ap.add_argument("--no-ch-run", action="store_true", help="leave Charliecloud out")
    args = ap.parse_args()
    size = parse_size(args.size)
    work = tempfile.mkdtemp(prefix="mb-bench-variants-")
    try:
        image = None
        if not args.no_ch_run and shutil.which("ch-run") and os.path.exists(BUSYBOX):
            os.environ.setdefault("USER", "root")   # ch-run needs it
            harness.ENV.setdefault("USER", os.environ["USER"])
            image = busybox_image(os.path.join(work, "image"))
        else:
            print("ch-run or /bin/busybox missing (or --no-ch-run): no Charliecloud variant")
        os.makedirs(os.path.join(work, "scratch"))
        vs = variants(image)
        names = [n for n, _ in vs]
        got: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for i in range(args.warmup + args.rounds):
            order = vs if i % 2 == 0 else vs[::-1]
            r = one_round(os.path.join(work, "scratch"), order, args.repeat, size)
            rnd = i - args.warmup
            what = "warm-up (not counted)" if rnd < 0 else f"round {rnd + 1}"
            print(f"  {what} ({' '.join(n for n, _ in order)}): " + "   ".join(
                f"{n} skew {fmt(r[n]['skew_ns'] / 1e3)} us, write {fmt(r[n]['write_mib_s'])} "
                f"MiB/s" for n in names), flush=True)
            if rnd >= 0:
                for n in names:
                    got[n].append(r[n])
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def series(n: str, key: str) -> list[float]:
        return [x[key] for x in got[n]]

    ok = True
    for n in names[1:]:
        ok &= verdict(Goal(f"io.write bandwidth, {n} / plain", 0.97, upper=1.03),
                      series(n, "write_mib_s"), series("plain", "write_mib_s"), "MiB/s")
        ok &= skew_gate(n, series(n, "skew_ns"), series("plain", "skew_ns"))
        info(f"null skew, {n} / plain", series(n, "skew_ns"), series("plain", "skew_ns"),
             "ns", direction="lower")
        if n.startswith("wrap"):
            starts = series(n, "startup_s")
            print(f"{n} start-up (outside the window, for information): median "
                  f"{fmt(statistics.median(starts) * 1e3)} ms; rounds "
                  + " ".join(rfmt(s * 1e3) for s in starts) + " ms", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
