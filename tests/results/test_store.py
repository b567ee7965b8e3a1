"""results.db: round trips, one transaction per phase, killed runs, read-only readers."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from manybench.results.contract import RunNotes, StoredNode, Warning
from manybench.results.store import DB_NAME, Store

from builders import T0, phase, plan, recs
from suite_paths import ROOT, TESTS

SRC = str(ROOT / "src")


def test_round_trip(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench", "run", "p.toml"], {"hostname": "h"},
                  RunNotes(slots=4, phases=2, cpus=2, oversubscribed=True))
    st.write_phase("r1", phase(0), T0, recs("r1", 0, nodes=("n2", "n1")))
    st.write_phase("r1", phase(1), T0 + 5, recs("r1", 1), status="interrupted")
    runs = st.runs()
    assert len(runs) == 1
    r = runs[0]
    assert (r.run_id, r.name, r.status, r.ended_ns) == ("r1", "store-test", "running", None)
    assert r.plan_source == 'name = "store-test"\n'
    assert r.plan_raw == {"name": "store-test", "task": [{"name": "w"}]}
    assert r.argv == ["manybench", "run", "p.toml"]
    assert r.environment == {"hostname": "h"}
    assert r.notes == RunNotes(slots=4, phases=2, cpus=2, oversubscribed=True)
    assert r.phases == 2

    got = st.records("r1")
    # ordered by phase, node, slot
    assert [(x.phase, x.node, x.slot) for x in got] == [
        (0, "n1", 0), (0, "n1", 1), (0, "n2", 0), (0, "n2", 1), (1, "n1", 0), (1, "n1", 1)]
    want = {(x.phase, x.node, x.slot): x for x in recs("r1", 0, nodes=("n2", "n1")) + recs("r1", 1)}
    for x in got:
        assert x == want[(x.phase, x.node, x.slot)]   # every field, hist keys back as ints
    assert got[0].hist == {3: 7, 70: 1}

    ph = st.phases("r1")
    assert [(p.index, p.status, p.t0_ns) for p in ph] == [(0, "ok", T0), (1, "interrupted", T0 + 5)]
    assert ph[0].params == {"size": 1048576} and ph[0].point == "w|1MiB|2"
    assert ph[0].label == phase(0).label and ph[0].workers == 2

    st.update_notes("r1", RunNotes(slots=1))
    st.end_run("r1", "finished")
    r = st.runs()[0]
    assert r.status == "finished" and r.ended_ns >= r.started_ns and r.notes == RunNotes(slots=1)
    with pytest.raises(ValueError):
        st.end_run("r1", "done")
    st.close()
    st.close()  # idempotent


def test_values_read_back_as_json_reads_them(tmp_path):
    """Records are read with orjson where it gives what json gives: integers past
    -2**63..2**64-1 (which orjson makes floats), NaN and infinities (which it refuses) are
    read as json reads them; the rest, exactly the same values."""
    import json
    import math
    from manybench.results import record_read
    texts = ['{"a":0.1,"b":1e-320,"c":-0.0,"d":1.7976931348623157e308,"e":"\\u00e9x"}',
             '{"t":1795665580123456789,"u":18446744073709551615,"v":-9223372036854775808}',
             '{"big":123456789012345678901234567890,"neg":-9223372036854775809}',
             '{"n":NaN,"i":Infinity,"m":-Infinity}', '{"x":[1,{"y":2.5}],"z":null}',
             '{"f":%r,"g":%r}' % (2 / 3, 1e22)]
    for text in texts:
        got, want = record_read.loads(text), json.loads(text)
        assert json.dumps(got) == json.dumps(want), text       # NaN compares unequal
        assert [type(v) for v in got.values()] == [type(v) for v in want.values()], text
    assert record_read.loads(texts[2])["big"] == 123456789012345678901234567890
    assert math.isnan(record_read.loads(texts[3])["n"])
    st = Store(tmp_path)
    st.begin_run("r1", plan(), [], {}, RunNotes())
    rs = recs("r1", 0)
    rs[0].metrics.update(big=10**30, t=1795665580123456789, third=1 / 3)
    st.write_phase("r1", phase(0), T0, rs)
    got = {(x.node, x.slot): x for x in st.records("r1")}
    assert got[(rs[0].node, rs[0].slot)] == rs[0]
    st.close()


def test_several_runs_and_rewrite(tmp_path):
    with Store(tmp_path) as st:
        st.begin_run("a", plan(), [], {})
        st.write_phase("a", phase(0), T0, recs("a", 0))
        st.begin_run("b", plan(), [], {})
        st.write_phase("b", phase(0), T0, recs("b", 0, slots=(0,)))
        # writing a phase again replaces it whole
        st.write_phase("a", phase(0), T0, recs("a", 0, slots=(5,)))
        assert [r.run_id for r in st.runs()] == ["a", "b"]
        assert [(x.run, x.slot) for x in st.records()] == [("a", 5), ("b", 0)]
        assert [x.slot for x in st.records("a")] == [5]


def test_failed_write_leaves_nothing(tmp_path):
    with Store(tmp_path) as st:
        st.begin_run("r", plan(), [], {})
        bad = recs("r", 0)
        bad[1].node = None   # NOT NULL: the second insert fails inside the transaction
        with pytest.raises(sqlite3.IntegrityError):
            st.write_phase("r", phase(0), T0, bad)
        assert st.phases("r") == [] and st.records("r") == []
        st.write_phase("r", phase(0), T0, recs("r", 0))   # the store is still usable
        assert len(st.records("r")) == 2


def test_one_transaction_per_phase(tmp_path):
    """A second connection sees a phase only after write_phase returned, all of it at once."""
    st = Store(tmp_path)
    st.begin_run("r", plan(), [], {})
    reader = Store(tmp_path, readonly=True)
    seen_during = []

    def trace(sql: str) -> None:
        # runs inside write_phase, after the phase row was inserted, before COMMIT
        if sql.lstrip().upper().startswith("INSERT INTO RECORDS"):
            seen_during.append((len(reader.phases("r")), len(reader.records("r"))))

    st._db.set_trace_callback(trace)
    st.write_phase("r", phase(0), T0, recs("r", 0, nodes=("a", "b", "c")))
    st._db.set_trace_callback(None)
    assert seen_during and set(seen_during) == {(0, 0)}
    assert len(reader.phases("r")) == 1 and len(reader.records("r")) == 6
    reader.close()
    st.close()


def test_readonly_reader(tmp_path):
    with pytest.raises(FileNotFoundError):
        Store(tmp_path / "none", readonly=True)
    assert not (tmp_path / "none").exists()   # a reader creates nothing
    st = Store(tmp_path)
    st.begin_run("r", plan(), [], {})
    ro = Store(tmp_path, readonly=True)       # opened while the writer is open
    assert ro.runs()[0].status == "running" and ro.records("r") == []
    st.write_phase("r", phase(0), T0, recs("r", 0))
    assert len(ro.records("r")) == 2          # later commits become visible
    with pytest.raises(PermissionError):
        ro.end_run("r", "finished")
    with pytest.raises(sqlite3.OperationalError):
        ro._db.execute("DELETE FROM records")
    st.end_run("r", "finished")
    st.close()
    assert ro.runs()[0].status == "finished"
    ro.close()


def test_killed_run_stays_readable(tmp_path):
    """A process killed mid-run leaves its committed phases, and the run marked running."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {os.path.abspath(SRC)!r})
        sys.path.insert(0, {str(TESTS)!r})
        from builders import T0, phase, plan, recs
        from manybench.results.store import Store
        st = Store({str(tmp_path)!r})
        st.begin_run("k", plan(), ["manybench"], {{}})
        for i in range(3):
            st.write_phase("k", phase(i), T0, recs("k", i))
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert (tmp_path / DB_NAME).exists()
    with Store(tmp_path, readonly=True) as ro:
        run = ro.runs()[0]
        assert run.status == "running" and run.ended_ns is None and run.phases == 3
        assert len(ro.records("k")) == 6
    # a later writer can still mark it (e.g. a cleanup command)
    with Store(tmp_path) as st:
        st.end_run("k", "aborted")
        assert st.runs()[0].status == "aborted"


def test_many_phases_commit(tmp_path):
    # not a timing assertion (see benchmarks/): many small commits simply work
    with Store(tmp_path) as st:
        st.begin_run("r", plan(), [], {})
        for i in range(300):
            st.write_phase("r", phase(i), T0, recs("r", i))
        assert len(st.phases("r")) == 300 and len(st.records("r")) == 600
        assert st._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st._db.execute("PRAGMA synchronous").fetchone()[0] == 1   # NORMAL


def test_nodes_and_warnings_round_trip(tmp_path):
    with Store(tmp_path) as st:
        st.begin_run("r", plan(), [], {})
        inv = {"hostname": "n1", "physical_cores": 8, "peaks": {"detected": {"cores": 8}}}
        st.write_nodes("r", [StoredNode("r", "n2", "10.0.0.2", 2, 4, "m2", 5, 3, {}),
                             StoredNode("r", "n1", "10.0.0.1", 2, 8, "m1", -7, 9, inv)])
        st.write_nodes("r", [StoredNode("r", "n1", "10.0.0.1", 2, 8, "m1", -6, 11, inv)])
        st.add_warning("r", Warning("pin", "slots share cpus", node="n1"))
        st.add_warning("r", Warning("missing-metric", "no rate", task="dd", phase=3))
        nodes = st.nodes("r")
        assert [(n.name, n.offset_ns, n.error_ns) for n in nodes] == [("n1", -6, 11), ("n2", 5, 3)]
        assert nodes[0].inventory == inv and nodes[1].host == "10.0.0.2" and nodes[0].cpus == 8
        ws = st.warnings("r")
        assert [(w.kind, w.node, w.task, w.phase) for w in ws] == [
            ("pin", "n1", "", None), ("missing-metric", "", "dd", 3)]
        assert all(w.time_ns > 0 and w.run == "r" for w in ws)
    with Store(tmp_path) as st:    # numbering goes on in a later session
        st.add_warning("r", Warning("clock", "late"))
        assert [w.kind for w in st.warnings("r")] == ["pin", "missing-metric", "clock"]


def test_a_resume_counts_the_kept_phases_failures_without_reading_records(tmp_path,
                                                                           monkeypatch):
    """--resume keeps the phases stored ok and carries their failed records into the run's
    exit status; it counts them in SQLite, not by reading every Record (millions at scale)."""
    from dataclasses import replace

    from manybench.run.resume import latest_run
    st = Store(tmp_path)
    st.begin_run("r1", plan(), [], {}, RunNotes())
    st.write_phase("r1", phase(0), T0, recs("r1", 0))
    failing = recs("r1", 1, nodes=("n1", "n2"))
    failing[1] = replace(failing[1], status="error", error="boom")
    failing[2] = replace(failing[2], status="timeout")
    st.write_phase("r1", phase(1), T0, failing)
    cut = recs("r1", 2)
    cut[0] = replace(cut[0], status="interrupted")
    st.write_phase("r1", phase(2), T0, cut, status="interrupted")
    st.end_run("r1", "interrupted")
    assert st.not_ok("r1") == {1: 2, 2: 1}
    st.close()
    monkeypatch.setattr(Store, "records", lambda *a, **k: pytest.fail("read every record"))
    info, kept = latest_run(str(tmp_path))
    assert (info.run_id, kept.done, kept.failed) == ("r1", {0, 1}, 2)
