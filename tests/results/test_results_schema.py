"""results.db's schema version: checked on every open, older files migrated, newer refused.

fixtures/results/v1.db is a real results directory's database written by manybench 0.1.0
(schema 1: runs, phases, records; clocks in the run's notes): a null, an io.write and a
command task, 2 repeats, workers 1 and 2. fixtures/results/v7.db is one written by the
manybench before schema 8 (phases without their prepare, window and cleanup times): a null
and a `true` command task, 2 repeats, workers 1 and 2.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3

import pytest

from conftest import run_cli
from suite_paths import FIXTURES
from manybench.results.contract import PhaseTimes
from manybench.results.schema import SCHEMA_VERSION, SchemaError
from manybench.results.store import Store

V1 = str(FIXTURES / "results" / "v1.db")


def _copy(tmp_path, name="res") -> str:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(V1, d / "results.db")
    return str(d)


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _version(path: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


def test_a_read_only_open_migrates_a_copy_and_never_the_file(tmp_path):
    d = _copy(tmp_path)
    before = _digest(os.path.join(d, "results.db"))
    with Store(d, readonly=True) as st:
        run = st.runs()[0]
        assert run.name == "v1-fixture" and run.status == "finished"
        assert run.notes.slots == 2 and run.notes.phases == 12 and not run.notes.oversubscribed
        assert len(st.phases(run.run_id)) == 12 and len(st.records(run.run_id)) == 18
        # schema 2's nodes come from schema 1's clocks; the coordinator's inventory is the
        # node's own only because the node is the coordinator's host
        [node] = st.nodes(run.run_id)
        assert node.name == run.environment["hostname"].split(".")[0]
        assert node.inventory == run.environment and node.error_ns == 0
        assert st.warnings(run.run_id) == []
    assert _digest(os.path.join(d, "results.db")) == before and _version(
        os.path.join(d, "results.db")) == 1


@pytest.mark.e2e
def test_report_and_export_read_a_v1_directory(tmp_path):
    d = _copy(tmp_path)
    rep = run_cli("report", d)
    assert rep.returncode == 0, rep.stderr
    assert "v1-fixture" in rep.stdout and "sync (null)" in rep.stdout
    assert "echo (command)" in rep.stdout and "write (io.write)" in rep.stdout
    out = run_cli("export", d, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)) == 18


def test_a_v7_file_opens_its_phases_without_times_and_a_writer_adds_them(tmp_path):
    """Schema 8: phases.prepare_s, prepare_node, window_s, cleanup_s; a file before it reads
    them as unknown (no "time outside the windows" line), and a run added to it stores them."""
    from manybench.report import build
    from manybench.report.time_line import LABEL
    d = tmp_path / "v7"
    d.mkdir()
    shutil.copy(V1.replace("v1.db", "v7.db"), d / "results.db")
    path = str(d / "results.db")
    before = _digest(path)
    with Store(str(d), readonly=True) as ro:
        [run] = ro.runs()
        phases = ro.phases(run.run_id)
        assert len(phases) == 8 and len(ro.records(run.run_id)) == 12
        assert all(p.times == PhaseTimes() for p in phases)
    [view] = build.build(str(d))
    assert LABEL not in dict(view.header) and dict(view.header)["status"] == "finished"
    assert _digest(path) == before and _version(path) == 7
    from builders import T0, phase, plan, recs
    with Store(str(d)) as st:
        st.begin_run("w", plan(), [], {})
        st.write_phase("w", phase(0), T0, recs("w", 0), times=PhaseTimes(1.5, "n1", 2.0, 0.25))
        assert st.phases("w")[0].times == PhaseTimes(1.5, "n1", 2.0, 0.25)
        assert st.phases(run.run_id) == phases
    assert _version(path) == SCHEMA_VERSION


def test_a_writer_migrates_in_place_and_keeps_every_row(tmp_path):
    d = _copy(tmp_path)
    with Store(d, readonly=True) as ro:
        old = (ro.runs(), ro.phases(ro.runs()[0].run_id), ro.records())
    with Store(d) as st:       # a second run into the same directory opens it for writing
        assert (st.runs(), st.phases(old[0][0].run_id), st.records()) == old
    path = os.path.join(d, "results.db")
    assert _version(path) == SCHEMA_VERSION
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert {"runs", "phases", "records", "nodes", "warnings"} <= tables


@pytest.mark.e2e
def test_v1_notes_become_nodes_and_warnings(tmp_path):
    d = _copy(tmp_path)
    path = os.path.join(d, "results.db")
    db = sqlite3.connect(path)
    notes = {"slots": 4, "phases": 3, "cpus": 4, "oversubscribed": False, "nodes": ["a", "b"],
             "clocks": {"a": {"offset_ns": 5, "error_ns": 40}, "b": {"offset_ns": -9,
                                                                     "error_ns": 900}},
             "clock_warnings": ["b"], "lost": {"a": "node a lost: its Dask worker left"}}
    db.execute("UPDATE runs SET notes=?", (json.dumps(notes),))
    db.commit()
    db.close()
    with Store(d, readonly=True) as st:
        run = st.runs()[0]
        nodes = {n.name: n for n in st.nodes(run.run_id)}
        assert (nodes["a"].offset_ns, nodes["b"].error_ns) == (5, 900)
        assert nodes["a"].inventory == {} == nodes["b"].inventory   # neither is the host
        ws = [(w.kind, w.node) for w in st.warnings(run.run_id)]
        assert ws == [("clock", "b"), ("node-lost", "a")]
    rep = run_cli("report", d)
    assert "CLOCK WARNING: node b" in rep.stdout and "NODE LOST: node a lost" in rep.stdout


@pytest.mark.e2e
def test_a_newer_file_is_refused_with_a_clear_error(tmp_path):
    d = _copy(tmp_path)
    path = os.path.join(d, "results.db")
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    for readonly in (True, False):
        with pytest.raises(SchemaError, match="newer manybench"):
            Store(d, readonly=readonly)
    for args in (("report", d), ("export", d)):
        res = run_cli(*args)
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr
        assert f"results schema {SCHEMA_VERSION + 1}" in res.stderr and "upgrade" in res.stderr
    assert _version(path) == SCHEMA_VERSION + 1     # and left as it was


def test_a_new_file_gets_the_current_version(tmp_path):
    Store(tmp_path).close()
    assert _version(str(tmp_path / "results.db")) == SCHEMA_VERSION


def _records_indexes(path: str) -> list:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT name FROM sqlite_master WHERE type='index' AND "
                          "tbl_name='records'").fetchall()
    finally:
        db.close()


def test_records_have_no_key_in_a_new_file_and_keep_theirs_in_an_old_one(tmp_path):
    """Schema 7: a new file's records have no index (a quarter of a phase's insert); an older
    file migrated keeps its key, and in both a phase stored again replaces its records."""
    from builders import T0, phase, plan, recs
    new = tmp_path / "new"
    d = _copy(tmp_path)
    for where in (str(new), d):
        with Store(where) as st:
            st.begin_run("w", plan(), [], {})
            st.write_phase("w", phase(0), T0, recs("w", 0, nodes=("b", "a")))
            st.write_phase("w", phase(1), T0, recs("w", 1))
            st.write_phase("w", phase(0), T0, recs("w", 0, slots=(7,)))    # again: replaced
            got = [(r.phase, r.node, r.slot) for r in st.records("w")]
        assert got == [(0, "n1", 7), (1, "n1", 0), (1, "n1", 1)], where
    assert _records_indexes(str(new / "results.db")) == []
    assert _records_indexes(os.path.join(d, "results.db")) != []
    assert _version(os.path.join(d, "results.db")) == SCHEMA_VERSION


def test_records_read_in_phase_node_slot_order_whatever_order_they_were_stored(tmp_path):
    from builders import T0, phase, plan, recs
    with Store(tmp_path) as st:
        st.begin_run("w", plan(), [], {})
        st.write_phase("w", phase(1), T0, recs("w", 1, nodes=("b", "a")))
        st.write_phase("w", phase(0), T0, recs("w", 0, nodes=("c",)))
        got = [(r.phase, r.node, r.slot) for r in st.records("w")]
    assert got == [(0, "c", 0), (0, "c", 1), (1, "a", 0), (1, "a", 1), (1, "b", 0),
                   (1, "b", 1)]
