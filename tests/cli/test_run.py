"""End to end: real plans through the real command line, checked through the export."""
from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import export_json, run_cli
from manybench.record import COLUMNS

pytestmark = pytest.mark.e2e


def test_null_io_meta_plan_records(plan_file, tmp_path):
    plan = plan_file("""
        name = "e2e"
        repeat = 2
        [placement]
        workers = [1, 2]
        [[task]]
        name = "sync"
        kernel = "null"
        [[task]]
        name = "w"
        kernel = "io.write"
        dir = "{tmp}"
        size = "256KiB"
        block = ["64KiB", "128KiB"]
        [[task]]
        name = "r"
        kernel = "io.read"
        dir = "{tmp}"
        size = "256KiB"
        block = "64KiB"
        [[task]]
        name = "mk"
        kernel = "meta.mkdir"
        dir = "{tmp}"
        total = 100
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir)
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out_dir)
    # phases: sync 2 workers-points x 2 reps, w 2 blocks x 2 workers x 2 reps, r 2x2, mk 2x2
    phases = {r["phase"] for r in rows}
    assert len(phases) == 4 + 8 + 4 + 4
    # records: (1 + 2 workers) x 2 reps per point = 6; w has two points
    assert len(rows) == 6 + 12 + 6 + 6
    # each phase has exactly `workers` records, one per slot, all ok
    by_phase: dict[int, list[dict]] = {}
    for r in rows:
        by_phase.setdefault(r["phase"], []).append(r)
    for recs in by_phase.values():
        assert len(recs) == recs[0]["workers"]
        assert sorted(r["slot"] for r in recs) == list(range(recs[0]["workers"]))
        assert all(r["status"] == "ok" for r in recs), recs
    for r in rows:
        # the contract's columns in order, then the extras (results-api.md)
        assert list(r) == [*COLUMNS, "rank", "stdout", "stderr", "missing_metrics", "extra"]
        assert r["start_ns"] >= r["t0_ns"]            # nobody starts before T0
        assert r["end_ns"] >= r["start_ns"]
        assert r["elapsed_s"] >= 0
        if r["task"] == "w":
            assert r["bytes"] == 256 * 1024
            assert r["ops"] == 256 * 1024 // r["params"]["block"]
            assert "lat_p99_us" in r["metrics"]
        if r["task"] == "r":
            assert r["bytes"] == 256 * 1024 and r["ops"] == 4
        if r["task"] == "mk":
            assert sum(x["ops"] for x in by_phase[r["phase"]]) == 100
        assert r["metrics"]["clock_offset_ns"] == 0
    # phases run in order: each phase's first start comes after the last end of the one
    # before it (every record of both)
    spans = [(min(r["start_ns"] for r in recs), max(r["end_ns"] for r in recs))
             for _, recs in sorted(by_phase.items())]
    assert all(prev_end < start for (_, prev_end), (start, _) in zip(spans, spans[1:]))
    # the run directory was removed: only what the run created
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith("e2e-")]
    assert leftovers == []
    # the report names the figures of docs/definitions.md
    rep = run_cli("report", out_dir)
    assert rep.returncode == 0
    for word in ("sync overhead", "skew", "lateness"):
        assert word in rep.stdout.lower()


def test_keep_leaves_scratch_and_only_run_dirs_are_removed(plan_file, tmp_path):
    (tmp_path / "precious.txt").write_text("mine")
    plan = plan_file("""
        name = "keep"
        keep = true
        [[task]]
        name = "w"
        kernel = "io.write"
        dir = "{tmp}"
        size = "64KiB"
    """)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q")
    assert res.returncode == 0, res.stderr
    kept = [p for p in os.listdir(tmp_path) if p.startswith("keep-")]
    assert len(kept) == 1
    assert (tmp_path / "precious.txt").read_text() == "mine"
    run_dir = tmp_path / kept[0]
    assert (run_dir / ".manybench-run").exists()
    files = [f for d, _, fs in os.walk(run_dir) for f in fs if f == "io.dat"]
    assert files


def test_run_is_recorded_finished_and_repeats_interleave_variants(plan_file, tmp_path):
    plan = plan_file("""
        name = "var"
        repeat = 2
        [[task]]
        name = "sync"
        kernel = "null"
        [[variant]]
        name = "a"
        [[variant]]
        name = "b"
    """)
    out_dir = str(tmp_path / "res")
    assert run_cli("run", plan, "-o", out_dir, "-q").returncode == 0
    rows = export_json(out_dir)
    assert [r["variant"] for r in sorted(rows, key=lambda r: r["phase"])] == ["a", "b", "a", "b"]
    db = sqlite3.connect(os.path.join(out_dir, "results.db"))
    assert db.execute("select status from runs").fetchone()[0] == "finished"


def test_export_csv_starts_with_exactly_the_contract_columns(plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    out_dir = str(tmp_path / "res")
    assert run_cli("run", plan, "-o", out_dir, "-q").returncode == 0
    csv_out = run_cli("export", out_dir, "--format", "csv")
    header = csv_out.stdout.splitlines()[0]
    # the contract's columns, then the extras and flattened params and metrics (issue 10)
    assert header.split(",")[:len(COLUMNS)] == list(COLUMNS)
    nested = run_cli("export", out_dir, "--format", "csv", "--nested").stdout.splitlines()[0]
    assert nested.split(",") == [*COLUMNS, "rank", "stdout", "stderr", "missing_metrics", "extra"]
    rows = export_json(out_dir)
    assert json.loads(json.dumps(rows))[0]["status"] == "ok"


def test_dry_run_prints_phases_and_runs_nothing(plan_file, tmp_path):
    plan = plan_file("""
        repeat = 2
        [placement]
        workers = [1, 2]
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    out_dir = tmp_path / "res"
    res = run_cli("run", plan, "-o", str(out_dir), "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "4 phases" in res.stdout
    assert "placement workers=2" in res.stdout
    assert not out_dir.exists()


def test_oversubscription_is_allowed_and_reported(plan_file, tmp_path):
    ncpu = len(os.sched_getaffinity(0))
    plan = plan_file(f"""
        [placement]
        workers = {ncpu + 2}
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q")
    assert res.returncode == 0, res.stderr
    assert "oversubscribed" in res.stderr
    assert len(export_json(out_dir)) == ncpu + 2


def test_slots_option_fixes_the_pool_and_limits_workers(plan_file, tmp_path):
    plan = plan_file("""
        [placement]
        workers = [1, 4]
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "--slots", "2")
    assert res.returncode == 2
    assert "placement.workers" in res.stderr


def test_elapsed_is_end_minus_start_exactly(plan_file, tmp_path):
    """One quantity (docs/definitions.md): the window is timed on the monotonic clock and
    end_ns = start_ns + elapsed, for built-in kernels and commands alike."""
    out = str(tmp_path / "res")
    res = run_cli("run", plan_file("""
        scratch = "{tmp}"
        [placement]
        workers = 2
        [[task]]
        name = "n"
        kernel = "null"
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "2MiB"
        [[task]]
        name = "c"
        command = ["sleep", "0.05"]
    """), "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    rows = export_json(out)
    assert {r["task"] for r in rows} == {"n", "w", "c"}
    for r in rows:
        assert abs((r["end_ns"] - r["start_ns"]) - r["elapsed_s"] * 1e9) < 1, r
