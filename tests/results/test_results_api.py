"""The Python API (manybench.results.open) and `export --table`: every table as pandas
DataFrames, CSV (flattened unless --nested), JSON and Parquet (issue 10, item 7)."""
from __future__ import annotations

import csv
import io
import json
import sys

import pytest
from click.testing import CliRunner

import manybench.results
from conftest import run_cli
from manybench.cli import main
from manybench.record import COLUMNS
from manybench.results.contract import RunNotes, Sample, StoredNode
from manybench.results.store import Store
from builders import T0, phase, plan, recs, telemetry


@pytest.fixture
def results(tmp_path) -> str:
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {}, RunNotes(slots=2))
    rs = recs("r1", 0)
    rs[0].extra.update(rank=1, stdout="out tail", stderr="err tail", missing_metrics=["rate"])
    rs[0].metrics.update(size_mb=7.5)
    st.write_phase("r1", phase(0), T0, rs, samples=[Sample("r1", 0, 1, "n1", 0.1, 5.0, "ops")])
    st.write_telemetry("r1", [telemetry("r1", T0 + 1, 0)])
    st.write_nodes("r1", [StoredNode("r1", "n1", "h", 2, 4, inventory={"kernel": "6.1",
                                                                       "numa": [0]})])
    st.begin_run("r2", plan(), ["manybench"], {}, RunNotes())
    st.write_phase("r2", phase(0), T0 + 9, recs("r2", 0))
    st.close()
    return str(tmp_path)


def test_open_gives_every_table_as_dataframes(results):
    res = manybench.results.open(results)
    assert list(res.runs()["run_id"]) == ["r1", "r2"]
    rec = res.records(run="r1")
    assert len(rec) == 2 and list(rec.columns[:len(COLUMNS)]) == list(COLUMNS)
    first = rec[rec["slot"] == 1].iloc[0]
    assert first["param.size"] == 1048576 and first["metric.lat_p50_us"] == 2.5
    assert first["metric.size_mb"] == 7.5 and first["stdout"] == "out tail"
    assert first["stderr"] == "err tail" and first["missing_metrics"] == "rate"
    assert len(res.records()) == 4 and "param.size" not in res.records(nested=True).columns
    ph = res.phases()
    assert list(ph["run"]) == ["r1", "r2"] and list(ph["warmup"]) == [False, False]
    assert ph["param.size"].tolist() == [1048576, 1048576]
    s = res.samples(run="r1")
    assert s[["rank", "t_s", "done", "unit"]].values.tolist() == [[1, 0.1, 5.0, "ops"]]
    assert res.samples(run="r2").empty and "t_s" in res.samples(run="r2").columns
    assert res.telemetry()["disk_write_bps"].tolist() == [1e8]
    nodes = res.nodes()
    assert nodes["inventory.kernel"].tolist() == ["6.1"] and "inventory.numa" not in nodes
    res.close()


def test_export_csv_flattens_unless_nested_and_keeps_the_contract_columns(results):
    runner = CliRunner()
    flat = runner.invoke(main, ["export", results, "--run", "r1"])
    assert flat.exit_code == 0, flat.output
    rows = list(csv.DictReader(io.StringIO(flat.output)))
    header = flat.output.splitlines()[0].split(",")
    assert header[:len(COLUMNS)] == list(COLUMNS)
    row = next(r for r in rows if r["slot"] == "1")
    assert json.loads(row["params"]) == {"size": 1048576}          # the contract, as before
    assert row["param.size"] == "1048576" and row["metric.size_mb"] == "7.5"
    assert (row["stdout"], row["stderr"], row["missing_metrics"]) == ("out tail", "err tail",
                                                                     "rate")
    nested = runner.invoke(main, ["export", results, "--nested"]).output.splitlines()[0]
    # the record's other extra facts last (issue 29, item 9), as an object when nested
    assert nested.split(",") == [*COLUMNS, "rank", "stdout", "stderr", "missing_metrics",
                                 "extra"]
    assert "extra.armed_ns" in header and header[-1].startswith("extra.")


@pytest.mark.parametrize("table,key", [("phases", "point"), ("samples", "t_s"),
                                       ("telemetry", "cpu_user_pct"), ("nodes", "offset_ns")])
def test_export_every_table_as_json(results, table, key):
    out = CliRunner().invoke(main, ["export", results, "--format", "json", "--table", table])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data and key in data[0]


@pytest.mark.e2e
def test_export_parquet_round_trips(results, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="pyarrow (the test extra) not installed")
    path = str(tmp_path / "rec.parquet")
    res = run_cli("export", results, "--format", "parquet", "-o", path)
    assert res.returncode == 0, res.stderr
    df = pd.read_parquet(path)
    assert len(df) == 4 and list(df.columns[:len(COLUMNS)]) == list(COLUMNS)
    assert sorted(df["param.size"].unique().tolist()) == [1048576]


def test_parquet_without_pyarrow_is_a_clear_exit_2(results, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)       # import pyarrow fails
    path = tmp_path / "x.parquet"
    out = CliRunner().invoke(main, ["export", results, "--format", "parquet", "-o", str(path)])
    assert out.exit_code == 2 and "needs pyarrow" in out.output
    assert not path.exists() and "Traceback" not in out.output


def test_export_of_an_unknown_run_is_exit_2(results):
    out = CliRunner().invoke(main, ["export", results, "--run", "nope"])
    assert out.exit_code == 2 and "no run 'nope'" in out.output


def test_open_without_results_says_so(tmp_path):
    with pytest.raises(FileNotFoundError):
        manybench.results.open(tmp_path)
