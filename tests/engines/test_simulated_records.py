"""A simulated run stores, phase for phase, exactly the records the reference path makes from
the same replies: the record path's C helpers (outcome.py, store.py: _native) beside the
Python loops they replace, each phase made both ways and stored in two results.db."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import export_json

pytestmark = pytest.mark.e2e

PLAN = """
    name = "simrec"
    repeat = 3
    [placement]
    workers = [32]
    [[task]]
    name = "sync"
    kernel = "null"
"""

# the coordinator as `manybench run`, every phase also made by the reference path (the
# Python loops, the records one by one into a statement binding every value) and stored in
# a second results.db (argv[1]) as its own phases are
TWIN = """
import sys
from manybench.cli import main
from manybench.results import record_rows as R, store as S
from manybench.run import coordinator as C, outcome as O
from manybench.run.stalls import flag_stalls

twin = S.Store(sys.argv[1])
R.SHARE_MIN_ROWS = 1     # a large phase's insert (the shared values in the statement)
made = {}
fast_collect, fast_write = C.collect, S.Store.write_phase

def collect(*a, **k):
    native = O._native
    O._native = None
    try:
        ref = fast_collect(*a, **k)
    finally:
        O._native = native
    done = fast_collect(*a, **k)
    made[id(done.records)] = (done.records, ref.records)
    return done

def write_phase(self, run_id, phase, t0, records, *a, **k):
    got = made.pop(id(records), None)
    if self is not twin and got is not None and got[0] is records:
        ref = got[1]
        flag_stalls(ref)
        ref.records()
        items, R._json_items = R._json_items, None
        try:
            fast_write(twin, run_id, phase, t0, ref, *a, **k)
        finally:
            R._json_items = items
    return fast_write(self, run_id, phase, t0, records, *a, **k)

C.collect, S.Store.write_phase = collect, write_phase
sys.argv = ["manybench", *sys.argv[2:]]
main()
"""


def _records(directory: str) -> list[tuple]:
    db = sqlite3.connect(os.path.join(directory, "results.db"))
    rows = db.execute("SELECT * FROM records ORDER BY phase, node, slot").fetchall()
    db.close()
    return rows


def test_a_simulated_run_stores_what_the_reference_path_makes(plan_file, tmp_path):
    plan = plan_file(PLAN)
    out, twin = str(tmp_path / "res"), str(tmp_path / "twin")
    res = subprocess.run([sys.executable, "-c", TWIN, twin, "run", plan, "-o", out,
                          "--simulate", "4x8,offset=2ms,seed=7,processes=1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr + res.stdout
    fast, ref = _records(out), _records(twin)
    assert len(fast) == 3 * 32 and fast == ref
    # and the export reads them back as the reference's
    assert {r["node"] for r in export_json(out)} == {f"sim{i}" for i in range(1, 5)}
