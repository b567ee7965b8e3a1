"""`export --table samples|series|telemetry` streamed a batch at a time (results/
flat_stream.py, issue 30): the same bytes as the held rows gave, in every format, from rows
never all in memory (a run with progress samples on every slot holds more of them than
records)."""
from __future__ import annotations

import io
import sqlite3

import pytest

from builders import T0, phase, plan, recs, telemetry
from manybench.results import export, flat_stream
from manybench.results.contract import RunNotes, Sample
from manybench.results.export_cli import export_table
from manybench.results.frames import table_rows
from manybench.results.store import Store


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path)
    for run, t0 in (("r1", T0), ("r0", T0 + 5)):      # r1 started first: exported first
        st.begin_run(run, plan(), ["manybench"], {}, RunNotes(slots=2))
        for i in range(3):
            st.write_phase(run, phase(i), t0 + i, recs(run, i),
                           samples=[Sample(run, i, r, f"n{r}", t / 10, t * 2.5, "bytes")
                                    for r in (1, 0) for t in (3, 1, 2)])
        st.write_telemetry(run, [telemetry(run, t0 + k, None if k == 1 else 0)
                                 for k in (2, 1, 3)])
    st.close()
    # a parser's tables (kept from a record's extra when a phase is stored), put in directly
    db = sqlite3.connect(tmp_path / "results.db")
    db.executemany("INSERT INTO series VALUES (?,?,?,?,?,?,?,?,?,?)",
                   [(run, i, "n1", 0, None if i else 0, "osu_bw", x, x / 3, "MB/s", "bytes")
                    for run in ("r1", "r0") for i in range(3) for x in (8.0, 1.0)])
    db.commit()
    db.close()
    st = Store(tmp_path)
    yield st
    st.close()


def _held(store: Store, table: str, fmt: str, run: str | None) -> str:
    out = io.StringIO()
    export.write(table_rows(store, table, run, True), fmt, out)
    return out.getvalue()


@pytest.mark.parametrize("table", sorted(flat_stream.FLAT))
@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl"])
@pytest.mark.parametrize("run", [None, "r0"])
def test_streamed_rows_are_the_held_rows(store, table, fmt, run, monkeypatch):
    if fmt not in export.FORMATS:
        pytest.skip(f"no {fmt} format")
    want = _held(store, table, fmt, run)
    monkeypatch.setattr(flat_stream, "BATCH_ROWS", 2)      # batches end mid-phase, mid-run
    got = io.StringIO()
    with store.snapshot() as con:
        t = flat_stream.flat_table(con, table, run)
        export.exporter(fmt)(t, got)
    assert got.getvalue() == want


def test_the_rows_come_in_batches_read_as_written(store, monkeypatch):
    monkeypatch.setattr(flat_stream, "BATCH_ROWS", 4)
    with store.snapshot() as con:
        t = flat_stream.flat_table(con, "samples", None)
        batches = iter(t.batches)
        assert not isinstance(t.batches, list) and len(next(batches)) == 4
    assert t.columns[:2] == ["run", "phase_id"] and t.kinds[1] == {int}


def test_parquet_holds_the_same_rows(store, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="pyarrow (the test extra) not installed")
    for table in flat_stream.FLAT:
        path = str(tmp_path / f"{table}.parquet")
        assert export_table(store, table, "parquet", path, None, False) == ""
        held = pd.DataFrame(table_rows(store, table, None, True))
        got = pd.read_parquet(path)
        assert got.columns.tolist() == held.columns.tolist()
        assert got.astype(str).values.tolist() == held.astype(str).values.tolist()
