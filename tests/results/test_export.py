"""Export: exactly record.COLUMNS, in order, in csv and json."""
from __future__ import annotations

import csv
import io
import json

import pytest

from manybench.results.export import EXPORTERS, FORMATS, export
from manybench.record import COLUMNS, Record


def records() -> list[Record]:
    base = dict(run="r1", task="w", kernel="io.write", variant="v", rep=0, workers=2, node="n1",
                cpu=3, t0_ns=1_700_000_000_000_000_000)
    return [
        Record(phase=0, slot=0, start_ns=1_700_000_000_000_001_000, end_ns=1_700_000_001_000_000_000,
               elapsed_s=0.999, ops=4, bytes=4194304, params={"block": 1048576, "dir": "/s, x"},
               metrics={"lat_p50_us": 2.5, "note": 'a "q"'}, hist={1: 2}, extra={"stdout": "x"},
               **base),
        Record(phase=0, slot=1, status="error", error="disk full,\nno space", **base),
    ]


def test_formats_table():
    assert set(FORMATS) == {"csv", "json", "jsonl", "parquet"} and set(EXPORTERS) == set(FORMATS)
    with pytest.raises(ValueError, match="csv, json"):
        export(records(), "xml", io.StringIO())


def test_csv_columns_and_values():
    out = io.StringIO()
    export(records(), "csv", out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 3 and all(len(r) == len(COLUMNS) for r in rows)
    first = dict(zip(COLUMNS, rows[1]))
    assert first["start_ns"] == "1700000000000001000" and first["bytes"] == "4194304"
    assert first["params"] == '{"block":1048576,"dir":"/s, x"}'           # compact JSON
    assert json.loads(first["metrics"]) == {"lat_p50_us": 2.5, "note": 'a "q"'}
    second = dict(zip(COLUMNS, rows[2]))
    assert second["status"] == "error" and second["error"] == "disk full,\nno space"
    assert second["params"] == "{}" and second["metrics"] == "{}"
    assert "hist" not in rows[0] and "extra" not in rows[0]


def test_json_columns_and_values():
    out = io.StringIO()
    export(records(), "json", out)
    data = json.loads(out.getvalue())
    assert isinstance(data, list) and len(data) == 2
    for obj in data:
        assert tuple(obj) == COLUMNS        # the keys, in order
    assert data[0]["params"] == {"block": 1048576, "dir": "/s, x"}
    assert data[0]["metrics"]["lat_p50_us"] == 2.5
    assert data[0]["t0_ns"] == 1_700_000_000_000_000_000 and isinstance(data[0]["elapsed_s"], float)
    assert data[1]["error"] == "disk full,\nno space"


def test_empty():
    out = io.StringIO()
    export([], "json", out)
    assert json.loads(out.getvalue()) == []
    out = io.StringIO()
    export([], "csv", out)
    assert out.getvalue() == ",".join(COLUMNS) + "\n"


@pytest.mark.e2e
@pytest.mark.parametrize("args", [("--format", "csv"), ("--format", "json"),
                                  ("--format", "csv", "--table", "phases")])
def test_export_into_a_reader_that_stops_early_says_nothing(tmp_path, args):
    """`export DIR | head` (issue 17, item 8): the reader closing the pipe is no error of
    the disk's; it printed "manybench: -o stdout: cannot write: Broken pipe"."""
    import subprocess
    import sys
    from conftest import run_cli
    from manybench.model import Phase, Plan, TaskSpec
    from manybench.results.store import Store
    spec = TaskSpec("n", "null", {})
    with Store(tmp_path) as st:
        st.begin_run("r", Plan(name="p", tasks=[spec], raw={}), [], {"hostname": "h"})
        for i in range(300):
            rec = Record(run="r", phase=i, task="n", kernel="null", variant="", rep=i,
                         workers=1, node="h", slot=0, cpu=0, t0_ns=i, start_ns=i, end_ns=i + 1)
            st.write_phase("r", Phase(i, spec, "null", "", i, 1, "spread", "core", {}, "n-1"),
                           i, [rec])
        st.end_run("r", "finished")
    assert run_cli("--version").returncode == 0      # marks the test e2e (fastpass)
    p = subprocess.run(f"{sys.executable} -m manybench export {tmp_path} {' '.join(args)} "
                       "| head -c 100 > /dev/null", shell=True, capture_output=True, text=True)
    assert p.stderr == "", p.stderr
