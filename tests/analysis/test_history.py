"""`manybench history DIR...` (issue 10, item 8): runs over time, runs per month, per point the
latest, mean, min and max of its headline figure, failures (test_history_joins.py: how runs
are joined)."""
from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import types

from click.testing import CliRunner

from manybench.analysis import headfigure
from manybench.analysis import history as H
from manybench.cli import main
from manybench.results.contract import RunNotes
from manybench.results.store import Store, db_path
from builders import T0, phase, plan, recs

NOV, DEC = 1_795_000_000 * 10**9, 1_797_000_000 * 10**9     # 2026-11-18, 2026-12-11


def _dir(tmp_path, name: str, runs: list[tuple[str, int, int, str]]) -> str:
    """runs: (run id, started_ns, bytes per record, status); records take 1 us."""
    d = str(tmp_path / name)
    st = Store(d)
    for run, started, nbytes, status in runs:
        st.begin_run(run, plan(), ["manybench"], {}, RunNotes())
        rs = [dataclasses.replace(r, bytes=nbytes) for r in recs(run, 0)]
        if status == "failed":
            rs[0] = dataclasses.replace(rs[0], status="error", error="disk full")
        st.write_phase(run, phase(0), T0, rs)
        st.end_run(run, status)
    st.close()
    db = sqlite3.connect(db_path(d))
    for run, started, _, _ in runs:
        db.execute("UPDATE runs SET started_ns=? WHERE id=?", (started, run))
    db.commit()
    db.close()
    return d


def test_runs_per_month_point_mean_and_max_and_failures(tmp_path):
    a = _dir(tmp_path, "a", [("a1", NOV, 1000, "finished"), ("a2", DEC, 3000, "failed")])
    b = _dir(tmp_path, "b", [("b1", NOV + 10**9, 2000, "finished")])
    h = H.history([a, b])
    assert [r.run_id for r in h.runs] == ["a1", "b1", "a2"]           # by time, over dirs
    assert h.per_month == {"2026-11": 2, "2026-12": 1}
    [t] = h.points             # the same point in every run
    # each phase: 2 slots x bytes over its 990 ns window (first start T0+10, last end T0+1001)
    per_run = [2 * n / 991e-9 for n in (1000, 2000)] + [3000 / 990e-9]
    assert t.task == "w" and t.figure == "bandwidth" and len(t.runs) == 3
    assert abs(t.mean - sum(per_run) / 3) < 1e-6 * t.mean and abs(t.max - max(per_run)) < 1
    assert abs(t.latest - per_run[-1]) < 1 and abs(t.min - min(per_run)) < 1
    assert [(r.run_id, r.failed) for r in h.runs if r.failed] == [("a2", 1)]
    out = CliRunner().invoke(main, ["history", a, b])
    assert out.exit_code == 0, out.output
    assert re.search(r"2026-11\W+2\W", out.output) and "failures: 1 of 3 runs" in out.output
    assert all(len(line) <= 80 for line in out.output.splitlines())
    data = json.loads(CliRunner().invoke(main, ["history", a, "--json"]).output)
    assert data["per_month"] == {"2026-11": 1, "2026-12": 1}


def test_a_declared_headline_wins(tmp_path, monkeypatch):
    a = _dir(tmp_path, "a", [("a1", NOV, 1000, "finished")])
    monkeypatch.setattr(headfigure, "kernel", lambda name: types.SimpleNamespace(
        headline=("latency",), runs_child=False))
    [t] = H.history([a]).points
    # the merged histograms of the records (test_store: 7 ops in bucket 3 ns, 1 in 70)
    assert (t.figure, t.unit, t.values) == ("latency", "s", [3e-9])


def test_a_directory_without_results_is_exit_2(tmp_path):
    out = CliRunner().invoke(main, ["history", str(tmp_path)])
    assert out.exit_code == 2 and "no results.db" in out.output


def test_variants_are_points_of_their_own(tmp_path, monkeypatch):
    """Issue 17, item 8: `history` mixed variants in "best point": a run of a slow and a fast
    variant showed the fast one's figure as the task's, as if the slow one had never run."""
    d = str(tmp_path / "v")
    st = Store(d)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes())
    for i, (variant, nbytes) in enumerate((("slow", 1000), ("fast", 4000))):
        rs = [dataclasses.replace(r, variant=variant, bytes=nbytes, phase=i)
              for r in recs("r1", i)]
        st.write_phase("r1", dataclasses.replace(phase(i), variant=variant,
                                                 point=f"w|1MiB|2|{variant}"), T0, rs)
    st.end_run("r1", "finished")
    st.close()
    h = H.history([d])
    assert sorted((t.task, t.variant) for t in h.points) == [("w", "fast"), ("w", "slow")]
    by = {t.variant: t.max for t in h.points}
    assert abs(by["fast"] / by["slow"] - 4) < 0.01
    monkeypatch.setenv("COLUMNS", "120")
    out = CliRunner().invoke(main, ["history", d])
    rows = [ln for ln in out.output.splitlines() if re.match(r"\W+(slow|fast)\W", ln)]
    assert len(rows) == 2, out.output
