#!/usr/bin/env python3
"""`manybench export --table samples|series|telemetry` of a large run: peak RSS and CPU at R
rows and at 4R, against the tree before the change (issue 30: a run's progress samples, one
row per slot per sampling tick, outnumber its records; they were exported as one list).

  python benchmarks/bench_export_tables.py                 # R = 1,024,000 rows per table
  python benchmarks/bench_export_tables.py --rows 100000 --before ''     # a quick look

A results.db is made once: a run of a few null phases by this tree (`--simulate 4x4`), then
R (and 4R) synthetic rows put into each table with SQLite, spread over its phases. Each
export is one `python -m manybench export DIR --table T --format F -o FILE` process: its CPU
and peak RSS from wait4 (bench_export.export). At R this tree and the tree before alternate;
at 4R this tree alone (the tree before holds every row: ~1 kB each in Python).

Goals (issue 30's for every export): peak RSS at R <= 300 MB; at 4R <= 1.1 x that at R.
Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys

from bench_export import GROWTH, RSS_MB, export, load, make_run, show
from harness import absolute, alternate, fmt, info, machine
from peer_tree import ROOT, before_tree, drop_tree

TABLES = ("samples", "series", "telemetry")
FORMATS = ("csv", "json", "parquet")


def fill(directory: str, rows: int) -> None:
    """`rows` rows in each table, over the run's phases, as a run would have stored them."""
    db = sqlite3.connect(os.path.join(directory, "results.db"))
    run, phases = db.execute("SELECT run, COUNT(*) FROM phases GROUP BY run").fetchone()
    per = rows // phases
    for p in range(phases):
        db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?)",
                       ((run, p, i % 4096, f"n{i % 64}", i * 1e-3, i * 4096.0, "bytes")
                        for i in range(per)))
        db.executemany("INSERT INTO series VALUES (?,?,?,?,?,?,?,?,?,?)",
                       ((run, p, f"n{i % 64}", i % 64, i % 4096, "osu_bw", float(2 ** (i % 23)),
                         i * 0.5, "MB/s", "bytes") for i in range(per)))
        db.executemany("INSERT INTO telemetry VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       ((run, f"n{i % 64}", i * 10**6, 0.5, p, 12.5, 3.0, 0.5, 2 << 30, 1 << 30,
                         0.0, 1e8, 40.0, 10.0, 20.0) for i in range(per)))
        db.commit()
    db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_024_000, help="R: rows per table")
    ap.add_argument("--rounds", type=int, default=1, help="counted pairs at R")
    ap.add_argument("--before", default="main", help="git ref of the peer tree ('' = none)")
    a = ap.parse_args()
    print(machine(), flush=True)
    print(load(), flush=True)
    made = before_tree(a.before) if a.before else None
    trees = {"this tree": ROOT, **({"before": made} if made else {})}
    runs = []
    ok = True
    try:
        for rows in (a.rows, 4 * a.rows):
            d = make_run(4, 4, 4, None)
            fill(d, rows)
            runs.append(d)
        for table in TABLES:
            for f in FORMATS:
                at_r = alternate({name: (lambda t=t, f=f: export(t, runs[0], f, "--table",
                                                                  table))
                                  for name, t in trees.items()}, a.rounds, 0,
                                 show(f"{table} {f} at {a.rows:,} rows"))
                at_4r = alternate({"this tree": lambda f=f: export(ROOT, runs[1], f, "--table",
                                                                     table)}, 1, 0,
                                  show(f"{table} {f} at {4 * a.rows:,} rows"))
                ours = at_r["this tree"]
                peak = min(g["rss_mb"] for g in ours)
                before = at_r.get("before")
                if before:
                    for what, key, unit in (("CPU", "cpu_s", "s"), ("peak RSS", "rss_mb", "MB")):
                        info(f"export --table {table} --format {f} at {a.rows:,} rows, {what}, "
                             "this tree / before", [g[key] for g in ours],
                             [g[key] for g in before], unit, "lower")
                ok &= absolute(f"export --table {table} --format {f} at {a.rows:,} rows, "
                               "peak RSS", peak, RSS_MB, "MB")
                four = at_4r["this tree"][0]["rss_mb"]
                ok &= absolute(f"export --table {table} --format {f}, peak RSS at 4R / at R",
                               four / peak, GROWTH, "x", beside=f"{fmt(four)} MB")
    finally:
        if made:
            drop_tree(made)
        for d in runs:
            shutil.rmtree(d, ignore_errors=True)
    print(load(), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
