"""results schema 3: provenance snapshots and the setup/teardown commands run on nodes; a
version 2 file (built here from the v1 fixture by the v1 -> v2 migration, as manybench with
schema 2 left it) read without being changed, migrated in place by a writer."""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3

import pytest

from manybench.node.protocol import CommandOutput, CommandsDone
from manybench.results import schema
from manybench.results.contract import START, NodeCommand, RunNotes, Snapshot
from manybench.results.store import Store
from builders import plan
from suite_paths import FIXTURES

V1 = str(FIXTURES / "results" / "v1.db")
T = 1_700_000_000_000_000_000


def _v2_dir(tmp_path) -> str:
    """A results directory whose results.db is schema 2 with the v1 fixture's runs."""
    d = tmp_path / "v2"
    d.mkdir()
    shutil.copy(V1, d / "results.db")
    db = sqlite3.connect(d / "results.db", isolation_level=None)
    schema._v1_to_v2(db)
    db.execute("PRAGMA user_version=2")
    db.close()
    return str(d)


def _tables(path: str) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        db.close()


def _version(path: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_v2_file_reads_without_change_and_migrates_for_a_writer(tmp_path):
    assert schema.SCHEMA_VERSION >= 3
    d = _v2_dir(tmp_path)
    path = os.path.join(d, "results.db")
    before = _digest(path)
    with Store(d, readonly=True) as ro:
        run = ro.runs()[0]
        old = (ro.runs(), ro.phases(run.run_id), ro.records(), ro.nodes(run.run_id))
        assert ro.snapshots(run.run_id) == [] and ro.node_commands(run.run_id) == []
    assert _digest(path) == before and _version(path) == 2
    assert "snapshots" not in _tables(path)
    with Store(d) as st:                      # a run writing here migrates the file in place
        assert (st.runs(), st.phases(run.run_id), st.records(), st.nodes(run.run_id)) == old
        st.write_snapshots(run.run_id, START, {"n1": {"taken_ns": T, "kernel": "6.1"}})
    assert _version(path) == schema.SCHEMA_VERSION and {"snapshots", "node_commands"} <= _tables(path)
    with Store(d, readonly=True) as ro:
        [s] = ro.snapshots(run.run_id)
        assert (s.node, s.label, s.taken_ns, s.data["kernel"]) == ("n1", START, T, "6.1")


def test_a_v1_file_goes_through_v2_to_v3(tmp_path):
    d = tmp_path / "v1"
    d.mkdir()
    shutil.copy(V1, d / "results.db")
    with Store(d, readonly=True) as ro:
        run = ro.runs()[0]
        assert len(ro.nodes(run.run_id)) == 1 and ro.snapshots(run.run_id) == []
    with Store(d) as st:
        assert st.node_commands(run.run_id) == []
    assert _version(str(d / "results.db")) == schema.SCHEMA_VERSION


def _out(argv, status, t, timed_out=False, out="", err=""):
    return CommandOutput(argv, status, out, err, t, t + 10, timed_out)


def test_snapshots_and_steps_round_trip(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    st.write_snapshots("r1", START, {"a": {"taken_ns": T, "x": 1}, "b": {"x": 2}})
    done = {"a": CommandsDone([_out(["tuned-adm", "profile", "hpc"], 0, T + 100, out="ok\n"),
                               _out(["mount", "/x"], 32, T + 200, err="no such device\n")],
                              before={"taken_ns": T + 50, "tuned": "balanced"},
                              after={"taken_ns": T + 300, "tuned": "hpc"}),
            "b": CommandsDone([_out(["sleep", "9"], -9, T + 100, timed_out=True)],
                              before={"taken_ns": T + 60}, after={"taken_ns": T + 400})}
    st.write_step("r1", "numa", "setup", done)
    st.write_step("r1", "numa", "teardown", {"a": CommandsDone([], {"taken_ns": T + 500},
                                                               {"taken_ns": T + 600})})
    with pytest.raises(ValueError, match="setup, teardown"):
        st.write_step("r1", "numa", "warmup", {})
    st.close()
    with Store(tmp_path, readonly=True) as ro:
        snaps = ro.snapshots("r1")
        assert [(s.seq, s.node, s.label) for s in snaps] == [
            (0, "a", "start"), (1, "b", "start"), (2, "a", "before setup numa"),
            (3, "b", "before setup numa"), (4, "a", "after setup numa"),
            (5, "b", "after setup numa"), (6, "a", "before teardown numa"),
            (7, "a", "after teardown numa")]
        assert snaps[1].taken_ns > 0                    # none given: the time it was stored
        assert ro.snapshots("r1", node="a", label="after setup numa")[0].data["tuned"] == "hpc"
        cmds = ro.node_commands("r1")
        assert [(c.seq, c.node, c.step, c.argv[0], c.exit_status, c.timed_out) for c in cmds] == [
            (0, "a", "setup", "tuned-adm", 0, False), (1, "a", "setup", "mount", 32, False),
            (2, "b", "setup", "sleep", -9, True)]
        assert cmds[0] == NodeCommand("r1", "a", "numa", "setup", ["tuned-adm", "profile", "hpc"],
                                      0, False, "ok\n", "", T + 100, T + 110, 0)
        assert cmds[1].stderr == "no such device\n"
        assert [c.node for c in ro.node_commands("r1", node="b")] == ["b"]
        assert ro.node_commands("r1", variant="other") == []
        assert isinstance(snaps[0], Snapshot)
