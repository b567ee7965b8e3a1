"""results schema 4: samples, telemetry and warm-up phases; a version 3 file (built here from
the v1 fixture by the v1 -> v2 -> v3 migrations, as manybench with schema 3 left it) read
without being changed, migrated in place by a writer."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sqlite3

from manybench.results import schema
from manybench.results.contract import RunNotes, Sample
from manybench.results.store import Store
from builders import T0, phase, plan, recs, telemetry
from suite_paths import FIXTURES

V1 = str(FIXTURES / "results" / "v1.db")


def _v3_dir(tmp_path) -> str:
    d = tmp_path / "v3"
    d.mkdir()
    shutil.copy(V1, d / "results.db")
    db = sqlite3.connect(d / "results.db", isolation_level=None)
    schema._v1_to_v2(db)
    schema._v2_to_v3(db)
    db.execute("PRAGMA user_version=3")
    db.close()
    return str(d)


def _version(path: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_v3_file_reads_unchanged_and_a_writer_migrates_it_to_v4(tmp_path):
    assert schema.SCHEMA_VERSION >= 4
    d = _v3_dir(tmp_path)
    path = os.path.join(d, "results.db")
    before = _digest(path)
    with Store(d, readonly=True) as ro:
        run = ro.runs()[0]
        old = (ro.runs(), ro.phases(run.run_id), ro.records(), ro.nodes(run.run_id))
        assert ro.samples(run.run_id) == [] and ro.telemetry(run.run_id) == []
        assert not any(p.warmup for p in old[1]) and len(old[1]) == 12
        assert all(p.go_ns is None for p in old[1])    # not stored before schema 6
    assert _digest(path) == before and _version(path) == 3
    with Store(d) as st:
        assert (st.runs(), st.phases(run.run_id), st.records(), st.nodes(run.run_id)) == old
        st.write_telemetry(run.run_id, [telemetry(run.run_id, T0, None)])
    assert _version(path) == schema.SCHEMA_VERSION
    with Store(d, readonly=True) as ro:
        assert len(ro.telemetry(run.run_id)) == 1


def test_samples_telemetry_and_warmup_round_trip(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    warm = dataclasses.replace(phase(0), warmup=True, rep=-1)
    s0 = [Sample("r1", 0, rank, "n1", t, t * 1e6 * (rank + 1), "bytes")
          for rank in (1, 0) for t in (0.2, 0.1)]
    st.write_phase("r1", warm, T0, recs("r1", 0), samples=s0)
    st.write_phase("r1", phase(1), T0 + 5, recs("r1", 1),
                   samples=[Sample("r1", 1, 0, "n1", 0.1, 7.0, "ops")])
    rows = [telemetry("r1", T0 + 2, 1), telemetry("r1", T0 + 1, None)]
    st.write_telemetry("r1", rows)
    st.close()
    with Store(tmp_path, readonly=True) as ro:
        p0, p1 = ro.phases("r1")
        assert p0.warmup and p0.rep == -1 and not p1.warmup
        got = ro.samples("r1", 0)
        assert [(s.rank, s.t_s) for s in got] == [(0, 0.1), (0, 0.2), (1, 0.1), (1, 0.2)]
        assert got[3].done == 0.2 * 2e6 and got[0].unit == "bytes"
        assert len(ro.samples("r1")) == 5 and ro.samples("r1", 1)[0].unit == "ops"
        assert ro.telemetry("r1") == sorted(rows, key=lambda t: t.t_ns)


def test_rewriting_a_phase_replaces_its_samples(tmp_path):
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    st.write_phase("r1", phase(0), T0, recs("r1", 0), samples=[Sample("r1", 0, 0, "n1", 0.1,
                                                                     1.0, "ops")] * 3)
    st.write_phase("r1", phase(0), T0, recs("r1", 0), samples=[Sample("r1", 0, 0, "n1", 0.1,
                                                                     2.0, "ops")])
    assert [s.done for s in st.samples("r1")] == [2.0]
    st.close()
