"""A summary to read by machine (issue 17, item 7): `manybench report DIR --json` and
`manybench.results.summary(DIR)` give every figure of every point with n, median, interval
and unit, and the throughput series; the numbers are the ones the terminal shows."""
from __future__ import annotations

import json
import sqlite3

import pytest

import manybench.results
from builders import StoreWithSamples, cmd_store, make_store
from conftest import run_cli
from manybench.report import render_text
from manybench.report.colunits import column_unit, value_spread
from manybench.report.html import html_page
from manybench.report.summary import summary
from manybench.results.store import Store

FIELDS = {"figure", "label", "unit", "scope", "over", "n", "median", "min", "max", "p99",
          "ci_low", "ci_high", "interval_note", "direction", "shape", "fixed", "quantiles",
          "shown_unit", "shown_factor"}


def _rows(text: str, task: str) -> dict[str, str]:
    """The compact table's rows of a task by their first cell (workers): the lines between
    the rule under its header and the next blank line."""
    lines = text.split(f"{task} (")[1].splitlines()
    start = next(i for i, line in enumerate(lines) if "───" in line) + 1
    rows = {}
    for line in lines[start:]:
        if not line.strip():
            break
        rows[line.split()[0]] = line
    return rows


def test_every_figure_of_every_point_with_n_median_interval_and_unit(tmp_path):
    cmd_store(tmp_path)
    data = manybench.results.summary(tmp_path)
    assert data["format"] == 2
    (run,) = data["runs"]
    (task,) = run["tasks"]
    assert task["task"] == "bwa" and [p["workers"] for p in task["points"]] == [1, 2, 4]
    p4 = task["points"][2]
    figs = {(v["figure"], v["scope"]): v for v in p4["figures"]}
    for v in p4["figures"]:
        assert set(v) == FIELDS
    # bw_mib_s: 4 slots x 2100(+rep) MiB/s summed per phase, 2 phases: in the unit its
    # name says, as every view shows it
    agg = figs[("bw_mib_s", "aggregate")]
    assert agg["unit"] == "MiB/s" and agg["n"] == 2 and agg["over"] == "phases"
    assert agg["median"] == 4 * 2100 and agg["max"] == 4 * 2101 and agg["fixed"]
    assert figs[("bw_mib_s", "per slot")]["median"] == 2100
    # two repetitions: no interval, said so
    assert agg["ci_low"] is None and agg["interval_note"] == "n too small"
    fsync = figs[("fsync_us", "per slot")]
    assert fsync["unit"] == "s" and fsync["median"] == pytest.approx(0.133001)
    assert p4["counts"] == {"exit_status": {"0": 8}}
    assert p4["throughput"] == []            # this store has no samples


@pytest.mark.e2e
def test_the_json_agrees_with_the_terminal(tmp_path):
    cmd_store(tmp_path)
    data = json.loads(run_cli("report", str(tmp_path), "--json").stdout)
    assert data == manybench.results.summary(tmp_path)
    points = data["runs"][0]["tasks"][0]["points"]
    rows = _rows(render_text(tmp_path, width=250), "bwa")
    for name in ("bw_mib_s", "reads_per_s", "fsync_us", "gflops"):
        vals = [next(v for v in p["figures"] if v["figure"] == name) for p in points]
        unit, div = column_unit(vals[0]["unit"], [v["median"] for v in vals])
        for p, v in zip(points, vals):
            cell = value_spread(v["median"], v["min"], v["max"], div)
            assert f" {cell} " in rows[str(p["workers"])] + " ", (name, cell, unit)


def test_throughput_series_and_intervals_from_three_repetitions(tmp_path):
    # io.write at 1, 2, 4 workers, sampled; null x 2 reps
    StoreWithSamples.samples_by_run, StoreWithSamples.telemetry_by_run = make_store(tmp_path)
    with StoreWithSamples(tmp_path, readonly=True) as st:
        data = summary(st)
    tasks = {t["task"]: t for t in data["runs"][0]["tasks"]}
    w4 = tasks["write"]["points"][2]
    (series,) = w4["throughput"]
    # 4 slots x 100 MiB/s, on the 0.1 s grid the samples were taken at
    assert series["unit"] == "B/s" and series["interval_s"] == pytest.approx(0.1)
    assert all(r == pytest.approx(400 * 2**20) for r in series["rate"])
    sync = tasks["sync"]["points"][0]
    so = next(v for v in sync["figures"] if v["figure"] == "sync_overhead")
    assert so["unit"] == "s" and so["n"] == 2 and so["interval_note"] == "n too small"


class _Counting(Store):
    """A store that notes which phase each read of samples asked for (None: the whole run)."""
    asked: list = []

    def samples(self, run_id, phase_id=None):
        _Counting.asked.append(phase_id)
        return super().samples(run_id, phase_id)


def test_samples_are_read_a_phase_at_a_time(tmp_path):
    """A run's progress samples outnumber its records (issue 30): report --json and the
    HTML figures read them a sampled phase at a time, never the whole run's at once, and
    give the same series as from the samples held."""
    samples, _ = make_store(tmp_path)
    db = sqlite3.connect(tmp_path / "results.db")     # stored, as a run stores them
    db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?)",
                   [(s.run, s.phase_id, s.rank, s.node, s.t_s, s.done, s.unit) for s in samples])
    db.commit()
    db.close()
    _Counting.asked = []
    with _Counting(tmp_path, readonly=True) as st:
        got = summary(st)
        page = html_page(st)
    assert _Counting.asked and None not in _Counting.asked
    assert set(_Counting.asked) == {s.phase_id for s in samples}
    assert 'data-plot="throughput"' in page
    StoreWithSamples.samples_by_run, StoreWithSamples.telemetry_by_run = samples, []
    with StoreWithSamples(tmp_path, readonly=True) as st:
        held = summary(st)
    series = [p["throughput"] for t in got["runs"][0]["tasks"] for p in t["points"]]
    assert any(series) and series == [p["throughput"] for t in held["runs"][0]["tasks"]
                                      for p in t["points"]]
