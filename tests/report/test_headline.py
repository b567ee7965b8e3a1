"""The terminal report's compact tables: one per task, within 80 columns, headline figures
with their spread, one rate unit per column, human times; --metrics and --all."""
from __future__ import annotations

import re

import pytest

from builders import cmd_store
from conftest import run_cli
from manybench.report import render_text
from manybench.analysis.values import metric_unit
from manybench.report.colunits import column_unit, num, rate_unit

T = 1_700_000_000_000_000_000
S = 1_000_000_000
MiB = 1 << 20
SIX = {"reads_per_s": "a", "bw_mib_s": "b", "fsync_us": "c", "wall_s": "d",
       "mapped_pct": "e", "gflops": "f"}


def _tables(text: str) -> list[str]:
    return re.findall(r"^(\S+ \([\w.]+\)(?:, \d+ phases? a row)?)\s*$", text, re.M)


def _fits(text: str, width: int = 80) -> None:
    assert all(len(line) <= width for line in text.splitlines()), \
        max(text.splitlines(), key=len)
    assert not re.search(r"\(\d+/\d+\)$", text, re.M), "a table was split"


def test_six_metric_command_task_fits_80_columns_in_one_table(tmp_path):
    cmd_store(tmp_path)
    text = render_text(tmp_path, width=80)
    _fits(text)
    assert _tables(text) == ["bwa (command), 2 phases a row"]
    table = text.split("bwa (command)")[1].split("lateness =")[0]
    for header in ("reads_per_s", "bw", "fsync", "wall", "mapped_pct", "gflops"):
        assert header in table, header
    # bw_mib_s: 1200..2101 MiB/s per slot, summed over a phase's slots (a rate): the
    # aggregate, in the unit its name says (MiB/s, never rescaled: issue 29, item 8),
    # median (min-max) over phases
    assert "MiB/s" in table and "GiB/s" not in table
    assert " 1200 " in table and " 8400 " in table   # 1200 and 4 x 2100 MiB/s
    wide = render_text(tmp_path, width=200).split("bwa (command)")[1]
    assert "8400 (8400-8404)" in wide                # the range where there is room
    # and per slot (aggregate / workers) in the aggregate's unit, labelled so
    assert "2100" in wide and "per slot, MiB/s" in wide and "aggregate, MiB/s" in wide
    # times in one human unit per column, named in its header: fsync_us 133000 -> 133 ms,
    # never "133k"
    assert "per slot, ms" in table and " 133 " in table and "133k" not in table
    assert "aggregate, k" in table and " 123 " in table      # reads_per_s: a count, in k


@pytest.mark.e2e
def test_demo_report_fits_80_columns_one_table_per_task(tmp_path):
    out = str(tmp_path / "demo")
    res = run_cli("demo", "-o", out)
    assert res.returncode == 0, res.stderr
    text = render_text(out, width=80)
    _fits(text)
    titles = _tables(text)
    assert [t.split(" (")[0] for t in titles] == ["sync", "write", "read", "mkdir"]
    body = text.split("lateness =")[0]                     # the tables, not the legend
    assert "per slot" in body and "sync overhead" in body, text
    assert "GiB/s" in body or "MiB/s" in body
    # --all still has every figure (split to fit when it must)
    full = render_text(out, width=80, all_columns=True)
    assert "lateness" in full and "per-slot time" in full


@pytest.mark.e2e
def test_metrics_option_picks_figures_and_refuses_unknown_names(tmp_path):
    cmd_store(tmp_path)
    text = render_text(tmp_path, width=80, figures=["gflops", "skew"])
    table = text.split("bwa (command)")[1].split("lateness =")[0]
    assert "gflops" in table and "skew" in table and "mapped_pct" not in table
    res = run_cli("report", str(tmp_path), "--metrics", "gflops,nope")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--metrics" in res.stderr and "'nope'" in res.stderr and "gflops" in res.stderr
    ok = run_cli("report", str(tmp_path), "--all")
    assert ok.returncode == 0 and "exit statuses" in ok.stdout


def test_narrow_terminal_drops_least_important_columns_and_says_so(tmp_path):
    cmd_store(tmp_path)
    text = render_text(tmp_path, width=60)
    _fits(text, 60)
    assert "not shown at this width:" in text and "--all" in text


def test_column_units():
    # a command's metric by its name's suffix; a declared one as its kernel declares it
    # a name that says its unit is shown in it (issue 29, item 8)
    assert metric_unit("command", "x_mb_s") == ("MB/s", 1.0)
    assert metric_unit("command", "x_us") == ("us", 1.0)
    assert metric_unit("command", "fsync_us") == ("s", 1e-6)
    assert metric_unit("command", "reads") == ("", 1.0)
    assert metric_unit("mem.stream", "triad_mb_s") == ("MB/s", 1.0)
    assert metric_unit("cpu.dgemm", "gflops") == ("GFLOPS", 1.0)
    assert rate_unit([900 * MiB, 1500 * MiB]) == ("GiB/s", 2.0**30)
    assert rate_unit([900 * MiB, 500 * MiB]) == ("MiB/s", 2.0**20)
    assert column_unit("s", [0.133, 0.002]) == ("ms", 1e-3)
    assert column_unit("ops/s", [12345.0]) == ("kops/s", 1e3)
    assert column_unit("", [5.0]) == ("", 1.0) and column_unit("MB/s", [1e5]) == ("MB/s", 1.0)
    assert num(133.4) == "133" and num(6.1) == "6.10" and num(0.0000123) == "<0.001"


def test_a_title_longer_than_its_table_is_one_line(tmp_path):
    """A compact table narrower than its title (the demo's mkdir under load: one column left)
    keeps its title whole on one line: rich wrapped it to the table's width, "mkdir
    (meta.mkdir), 3" over "phases a row", and the title was lost to a reader and to tests."""
    from dataclasses import replace
    from builders import T0, phase, plan, recs
    from manybench.results.contract import RunNotes
    from manybench.results.store import Store
    name = "writes-of-one-mebibyte-by-every-slot-of-the-node"
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes(slots=2))
    ph = phase(0)
    st.write_phase("r1", replace(ph, task=replace(ph.task, name=name)), T0,
                   [replace(r, task=name) for r in recs("r1", 0)])
    st.end_run("r1", "finished")
    st.close()
    text = render_text(tmp_path, width=80)
    title = f"{name} (io.write), 1 phase a row"
    table = text.split(title + "\n", 1)
    assert len(table) == 2, text
    rule = next(line for line in table[1].splitlines() if "───" in line)
    assert len(rule.strip()) < len(title)          # the table is narrower than its title
