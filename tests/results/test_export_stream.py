"""`manybench export` streams the records (issue 30, item 2): the same rows, columns and
order as the table the results API gives (frames.table_rows, written whole as before), in
memory that does not grow with the records, and a partitioned Parquet dataset that pandas,
DuckDB and dask.dataframe read as the one file."""
from __future__ import annotations

import csv
import io
import json
import math
import os
import tracemalloc

import pytest
from click.testing import CliRunner

from builders import T0, phase, plan
from manybench.cli import main
from manybench.record import COLUMNS, Record
from manybench.results import export as E
from manybench.results.contract import RunNotes
from manybench.results.export_cli import export_table
from manybench.results.frames import table_rows
from manybench.results.store import Store

FORMATS = ("csv", "json", "jsonl", "parquet")


def _rec(run: str, i: int, node: str, slot: int, **kw) -> Record:
    return Record(run=run, phase=i, task="w", kernel="io.write", variant="", rep=i, workers=4,
                  node=node, slot=slot, cpu=slot, t0_ns=T0, start_ns=T0 + 10 + slot,
                  end_ns=T0 + 1000 + slot, elapsed_s=1e-6, ops=4, bytes=1 << 20, **kw)


def _phase_records(run: str, i: int) -> list[Record]:
    """Four records (rb's out of (node, slot) order), with what export must carry over: a
    list param, a metric int in one record and a float in another, a metric only from
    phase 2 on, text a spreadsheet would run, a NaN, floats written with an exponent,
    non-ASCII, a nested metric, output tails with line ends, a list in extra, an extra key
    that is text in one record and a number in another, series (not in extra)."""
    params = {"size": 1 << 20, "dir": "/s, x", "list": [1, 2], "phase": i}
    out = []
    # rb's stored out of order (sorted as they are read), ra's in order (read as stored)
    given = (("n2", 1), ("n1", 1), ("n2", 0), ("n1", 0))
    for node, slot in (given if run == "rb" else sorted(given)):
        metrics = {"lat_p50_us": 2.5 if slot else 3, "note": "=1+1" if node == "n1" else "µs",
                   "nan": math.nan, "big": 1e16, "small": 1e-5, "nested": {"a": [1]}}
        if i >= 2:
            metrics["late"] = i
        extra = {"rank": slot, "stdout": "=cmd|' /C calc'!A0\r\nx" if slot else "ok",
                 "stderr": "e,\"q\"", "missing_metrics": ["rate"] if slot else [],
                 "argv": ["a", "b"], "mixed": "x" if node == "n1" else 7,
                 "series": [{"name": "lat", "points": [[1, 2.0]]}], "armed_ns": T0 - 5}
        out.append(_rec(run, i, node, slot, params=dict(params), metrics=metrics,
                        extra=extra, status="error" if slot and i == 1 else "ok",
                        error="disk full,\nno space" if slot and i == 1 else ""))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> str:
    """Two runs (rb begun first, so first), phases stored out of order and one stored twice
    (its rows after the others')."""
    d = str(tmp_path_factory.mktemp("stream"))
    with Store(d) as st:
        for run in ("rb", "ra"):
            st.begin_run(run, plan(), ["manybench"], {}, RunNotes(slots=4))
            for i in (0, 2, 1, 0):
                st.write_phase(run, phase(i, 4), T0, _phase_records(run, i))
            st.end_run(run, "finished")
    return d


def _streamed(d: str, fmt: str, run: str | None = None, nested: bool = False) -> bytes:
    out = os.path.join(d, f"out-{fmt}-{run}-{nested}")
    with Store(d, readonly=True) as st:
        assert export_table(st, "records", fmt, out, run, nested) == ""
    with open(out, "rb") as f:
        return f.read()


def _whole(d: str, fmt: str, run: str | None = None, nested: bool = False) -> bytes:
    """The table as the results API gives it, every row in a list, written by `write`."""
    buf = io.BytesIO() if fmt == "parquet" else io.StringIO(newline="")
    with Store(d, readonly=True) as st:
        E.write(table_rows(st, "records", run, nested or fmt in E.KEEPS_OBJECTS), fmt, buf,
                COLUMNS)
    got = buf.getvalue()
    return got if isinstance(got, bytes) else got.encode()


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl"])
@pytest.mark.parametrize("run,nested", [(None, False), ("ra", False), (None, True)])
def test_streamed_text_is_the_whole_tables_text(results, fmt, run, nested):
    got = _streamed(results, fmt, run, nested)
    assert got == _whole(results, fmt, run, nested)
    if fmt == "json":
        rows = json.loads(got)
        first = run or "rb"       # rb began first: its rows come first
        assert [(r["run"], r["phase"], r["node"], r["slot"]) for r in rows][:5] == [
            (first, 0, "n1", 0), (first, 0, "n1", 1), (first, 0, "n2", 0),
            (first, 0, "n2", 1), (first, 1, "n1", 0)]
        assert len(rows) == (12 if run else 24)


def test_streamed_csv_has_every_column_and_no_formula(results):
    rows = list(csv.DictReader(io.StringIO(_streamed(results, "csv").decode())))
    header = list(rows[0])
    assert tuple(header[:len(COLUMNS)]) == COLUMNS
    # found by the first pass: a metric first stored in phase 2, an extra key of two kinds
    assert "metric.late" in header and "extra.mixed" in header
    assert "param.list" not in header and "extra.argv" not in header      # lists stay inside
    assert {r["metric.note"] for r in rows} == {"'=1+1", "µs"}
    assert {r["stdout"] for r in rows} == {"ok", "'=cmd|' /C calc'!A0\r\nx"}
    assert {r["metric.late"] for r in rows if r["phase"] == "2"} == {"2"}
    assert {r["metric.late"] for r in rows if r["phase"] != "2"} == {""}


@pytest.mark.parametrize("nested", [False, True])
def test_streamed_parquet_reads_as_the_whole_table(results, nested):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) not installed")
    got = pd.read_parquet(io.BytesIO(_streamed(results, "parquet", None, nested)))
    want = pd.read_parquet(io.BytesIO(_whole(results, "parquet", None, nested)))
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns[:len(COLUMNS)]) == list(COLUMNS) and len(got) == 24
    # a column of text and numbers is text; ints stay ints where no cell is empty
    assert got["phase"].dtype == "int64"
    assert nested or set(got["extra.mixed"]) == {"x", "7"}


def _store_of(d: str, phases: int, per_phase: int) -> None:
    with Store(d) as st:
        st.begin_run("r", plan(), ["manybench"], {}, RunNotes(slots=per_phase))
        for i in range(phases):
            st.write_phase("r", phase(i, per_phase), T0, [
                _rec("r", i, "n1", s, metrics={"lat_p50_us": 2.5, "x": s},
                     extra={"rank": s, "stdout": "o" * 400}) for s in range(per_phase)])


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_holds_a_batch_not_every_record(tmp_path, monkeypatch, fmt):
    """Python's peak allocation while exporting 4x the records stays within 1.5x: the
    writers hold a batch (here 400 rows), not the run (4,000 vs 16,000 records of ~1 kB;
    int29 held every one, its peak ~4x). (A Parquet file's footer grows with its row
    groups, a few hundred bytes each: 40 here, 125 at 1,024,000 records.)"""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) not installed")
    try:
        from manybench.results import record_stream
        monkeypatch.setattr(E, "BATCH_ROWS", 400)
        monkeypatch.setattr(record_stream, "BATCH_ROWS", 400)
    except ImportError:         # a tree before it (int29): what the test shows it lacked
        pass
    peaks = []
    for phases in (10, 10, 40):      # the first: a warm-up (imports, caches), not counted
        d = str(tmp_path / str(len(peaks)))
        _store_of(d, phases, 400)
        with Store(d, readonly=True) as st:
            tracemalloc.start()
            try:
                assert export_table(st, "records", fmt, os.path.join(d, "out"), None,
                                    False) == ""
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
    assert peaks[2] <= 1.5 * peaks[1], peaks


def _dataset(results: str, tmp_path) -> str:
    pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) not installed")
    out = str(tmp_path / "ds")
    res = CliRunner().invoke(main, ["export", results, "--format", "parquet", "--partition",
                                    "-o", out])
    assert res.exit_code == 0, res.output
    return out


def _as_file(results: str):
    import pandas as pd
    return pd.read_parquet(io.BytesIO(_streamed(results, "parquet")))


def _same_rows(got, want) -> None:
    import pandas as pd
    key = ["run", "phase", "node", "slot"]
    got = got[list(want.columns)].sort_values(key).reset_index(drop=True)
    want = want.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_partitioned_dataset_reads_in_pandas(results, tmp_path):
    import pandas as pd
    out = _dataset(results, tmp_path)
    assert sorted(os.listdir(out)) == ["ra", "rb"]
    assert sorted(os.listdir(os.path.join(out, "ra"))) == [
        "phase-000000.parquet", "phase-000001.parquet", "phase-000002.parquet"]
    _same_rows(pd.read_parquet(out), _as_file(results))


def test_partitioned_dataset_reads_in_dask(results, tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    out = _dataset(results, tmp_path)
    _same_rows(dd.read_parquet(out).compute(), _as_file(results))


def test_partitioned_dataset_reads_in_duckdb(results, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    out = _dataset(results, tmp_path)
    got = duckdb.sql(f"SELECT * FROM read_parquet('{out}/*/*.parquet')").df()
    assert len(got) == 24 and list(got.columns[:len(COLUMNS)]) == list(COLUMNS)
    n = duckdb.execute(f"SELECT COUNT(*) FROM read_parquet('{out}/*/*.parquet') "
                       "WHERE run = 'ra' AND phase = 2").fetchall()
    assert n == [(4,)]


@pytest.mark.parametrize("args,says", [
    (["--format", "csv", "--partition", "-o", "X"], "needs --format parquet"),
    (["--format", "parquet", "--partition"], "-o DIR"),
    (["--format", "parquet", "--table", "phases", "--partition", "-o", "X"], "--table records"),
])
def test_partition_asks_for_what_it_needs(results, tmp_path, args, says):
    args = [str(tmp_path / "x") if a == "X" else a for a in args]
    res = CliRunner().invoke(main, ["export", results, *args])
    assert res.exit_code == 2 and says in res.output, res.output


@pytest.mark.parametrize("there", ["file", "directory"])
def test_partition_writes_a_new_directory_only(results, tmp_path, there):
    pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) not installed")
    ds = tmp_path / "ds"
    ds.mkdir() if there == "directory" else ds.write_text("mine")
    res = CliRunner().invoke(main, ["export", results, "--format", "parquet", "--partition",
                                    "-o", str(ds)])
    assert res.exit_code == 2 and ("exists" in res.output if there == "file" else
                                   "is a directory" in res.output), res.output
    assert os.listdir(tmp_path) == ["ds"]       # nothing beside it either
    assert there == "directory" or ds.read_text() == "mine"


@pytest.mark.parametrize("nested", [False, True])
def test_record_batches_are_the_records_frame_in_parts(results, monkeypatch, nested):
    """The API's iterator form (Results.record_batches): records() a few rows at a time."""
    pd = pytest.importorskip("pandas")
    import manybench.results
    from manybench.results import record_stream
    monkeypatch.setattr(record_stream, "BATCH_ROWS", 5)
    with manybench.results.open(results) as res:
        parts = list(res.record_batches(nested=nested))
        assert len(parts) > 1 and all(len(p) >= 5 for p in parts[:-1])
        got = pd.concat(parts, ignore_index=True)
        want = res.records(nested=nested)
        assert list(got.columns) == list(want.columns)
        # an empty cell: None in a batch whose cells of that column are all empty, NaN else
        empty = (lambda v: None if isinstance(v, float) and math.isnan(v) else v)
        assert json.dumps(got.astype(object).map(empty).values.tolist()) == \
            json.dumps(want.astype(object).map(empty).values.tolist())      # NaN is NaN
        assert list(res.record_batches(run="ra"))[0]["run"].unique().tolist() == ["ra"]


def test_both_passes_read_one_snapshot_while_a_run_writes(tmp_path):
    """A phase stored again (`run --resume`) between the first pass (the columns) and the
    second (the rows) is read as it was: neither lost nor under columns it lacks."""
    from manybench.results.record_stream import RecordTable
    d = str(tmp_path)
    _store_of(d, 2, 4)
    with Store(d, readonly=True) as st, st.snapshot() as con:
        t = RecordTable(con, st.path, None, False)
        with Store(d) as w:     # phase 0 replaced (its rows now after phase 1's)
            w.write_phase("r", phase(0, 4), T0, [
                _rec("r", 0, "n1", s, metrics={"new": 1}) for s in range(4)])
        rows = [r for batch in t.rows() for r in batch]
    assert [r[1] for r in rows] == [0] * 4 + [1] * 4 and "metric.new" not in t.columns
    assert all(len(r) == len(t.columns) for r in rows)
    assert json.loads(rows[0][COLUMNS.index("metrics")]) == {"lat_p50_us": 2.5, "x": 0}
    with Store(d, readonly=True) as st:        # the next export sees it
        assert table_rows(st, "records")[0]["metric.new"] == 1
