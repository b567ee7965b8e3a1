"""results schema 5: size-indexed tables (OSU, IMB) kept as rows of `series`, from a record's
extra["series"] (what a parser's tables() read), readable through manybench.results.open()
and `manybench export --table series`; a version 4 file migrated."""
from __future__ import annotations

import pytest

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import fields

import manybench.results
from manybench.parsers import parse_output
from manybench.results import schema
from manybench.results.contract import PhaseTimes, RunNotes
from manybench.results.store import Store
from builders import T0, phase, plan, recs
from suite_paths import FIXTURES, ROOT
SRC = str(ROOT / "src")

FIX = str(FIXTURES)


def _osu_records(run: str, i: int) -> list:
    with open(os.path.join(FIX, "osu", "osu_allreduce-f_7.4_mpich_np2.txt")) as f:
        metrics, tables = parse_output("osu", f.read(), "")
    rs = recs(run, i)                       # slots 1 and 0; the output is rank 0's
    rank0 = rs[1]
    rank0.metrics.update(metrics)
    rank0.extra.update(rank=0, series=[s.to_json() for s in tables])
    rs[0].extra["rank"] = 1
    return rs


def test_series_rows_round_trip_and_leave_extra(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    st.write_phase("r1", phase(0), T0, _osu_records("r1", 0))
    st.close()
    with Store(tmp_path, readonly=True) as ro:
        pts = ro.series("r1", 0)
        assert {p.name for p in pts} == {"osu_allreduce", "osu_allreduce.min",
                                         "osu_allreduce.max", "osu_allreduce.iterations"}
        assert len(pts) == 4 * 17 and {(p.node, p.slot, p.rank) for p in pts} == {("n1", 0, 0)}
        avg = {p.x: p.y for p in pts if p.name == "osu_allreduce"}
        assert avg[65536] == 27.16 and avg[1] == 0.52
        assert {p.unit for p in pts if p.name == "osu_allreduce.max"} == {"us"}
        rec = [r for r in ro.records() if r.slot == 0][0]
        assert "series" not in rec.extra and rec.metrics["latency_us"] == 0.52
    with manybench.results.open(tmp_path) as res:
        df = res.series()
        one = df[(df["name"] == "osu_allreduce") & (df["x"] == 16384)]
        assert list(one["y"]) == [5.97] and list(one["phase_id"]) == [0]


def test_rewriting_a_phase_replaces_its_series(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    st.write_phase("r1", phase(0), T0, _osu_records("r1", 0))
    st.write_phase("r1", phase(0), T0, recs("r1", 0))
    assert st.series("r1") == []
    st.close()


def test_empty_series_frame_names_its_columns(tmp_path):
    Store(tmp_path).close()
    with manybench.results.open(tmp_path) as res:
        assert list(res.series().columns) == ["run", "phase_id", "node", "slot", "rank", "name",
                                              "x", "y", "unit", "x_unit"]


def test_a_v4_file_gains_an_empty_series_table(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    st.write_phase("r1", phase(0), T0, recs("r1", 0))
    st.close()
    path = os.path.join(tmp_path, "results.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TABLE series")
    db.execute("ALTER TABLE phases DROP COLUMN go_ns")     # schema 6's, after series
    for f in fields(PhaseTimes):                            # and schema 8's
        db.execute(f"ALTER TABLE phases DROP COLUMN {f.name}")
    db.execute("ALTER TABLE runs DROP COLUMN options")      # and schema 10's
    db.execute("PRAGMA user_version=4")
    db.close()
    with Store(tmp_path, readonly=True) as ro:      # read through a migrated copy
        assert ro.series("r1") == [] and len(ro.records()) == 2
    with Store(tmp_path) as st:
        st.write_phase("r1", phase(1), T0, _osu_records("r1", 1))
        assert len(st.series("r1", 1)) == 4 * 17
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    db.close()


@pytest.mark.e2e
def test_export_series_table(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    st.write_phase("r1", phase(0), T0, _osu_records("r1", 0))
    st.close()
    env = dict(os.environ, PYTHONPATH=SRC)
    out = subprocess.run([sys.executable, "-m", "manybench", "export", str(tmp_path),
                          "--format", "json", "--table", "series"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert len(rows) == 4 * 17
    assert {"name": "osu_allreduce.iterations", "x": 16384.0, "y": 100.0}.items() <= \
        [r for r in rows if r["name"] == "osu_allreduce.iterations" and r["x"] == 16384][0].items()
