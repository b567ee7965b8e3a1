"""The record table (record_table.py) is the one declaration of a record's fields: every layer
is made from it (Record, the kernels' Result, the node's arrays, the phase's columns, the
outcome's assembly, the records table's SQL columns), and a field added to it reaches each."""
from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from manybench import record_table as rt
from manybench.engines.base import Node
from manybench.kernels.base import Result
from manybench.model import Phase, Plan, TaskSpec
from manybench.node.arrays import STAMPS, SlotResults
from manybench.node.protocol import Assignment, SlotPlace
from manybench.record import COLUMNS, Record
from manybench.record_columns import ALIKE, PHASE_COLUMNS, RUN, SLOT_COLUMNS
from manybench.results import schema
from manybench.results.store import Store
from manybench.run.outcome import collect

T = 1_700_000_000_000_000_000
from suite_paths import TESTS

HERE = str(TESTS)      # added_field.py: a helper beside conftest.py


def _layer(layer: str) -> list[rt.Field]:
    return [f for f in rt.TABLE if layer in f.layers]


def _default(fl: dataclasses.Field):
    return fl.default_factory() if fl.default is dataclasses.MISSING else fl.default


def test_record_result_and_arrays_are_the_tables_fields():
    for cls, layer, own in ((Record, rt.RECORD, []), (Result, rt.RESULT, []),
                            (SlotResults, rt.ARRAYS, ["slot"])):
        fields = dataclasses.fields(cls)
        assert [f.name for f in fields] == own + [f.name for f in _layer(layer)], cls
        assert all(f.kw_only for f in fields), cls
        with pytest.raises(TypeError):
            cls(*[0] * len(fields))                     # keyword-only
    for fl, f in zip(dataclasses.fields(Record), _layer(rt.RECORD)):
        assert (fl.type, fl.metadata["sql"], fl.metadata["json"], fl.metadata["export"]) == (
            f.type, f.sql, f.json, f.export)
        if f.default is not rt.REQUIRED or f.factory:
            assert _default(fl) == f.empty()
        else:
            assert fl.default is dataclasses.MISSING and fl.default_factory is dataclasses.MISSING
    for fl, f in zip(dataclasses.fields(Result), _layer(rt.RESULT)):
        assert (fl.type, _default(fl)) == (f.type, f.empty())
    arrays = {fl.name: fl for fl in dataclasses.fields(SlotResults)}
    for f in _layer(rt.ARRAYS):
        kind = f.packed[0] if f.packed else f.type
        assert arrays[f.name].type == (f"dict[int, {kind}]" if f.sparse else f"list[{kind}]")
    assert COLUMNS == tuple(f.name for f in _layer(rt.RECORD) if f.export)
    assert STAMPS == tuple(f.name for f in _layer(rt.ARRAYS) if f.stamp and not f.sparse)


def test_the_phases_columns_are_the_tables_by_source():
    record = _layer(rt.RECORD)
    for names, sources in ((RUN, ("run",)), (PHASE_COLUMNS, ("phase",)),
                           (SLOT_COLUMNS, ("place", "slot"))):
        assert names == tuple(f.name for f in record if f.source in sources)
    assert ALIKE == tuple(f.name for f in record if f.alike)
    assert sorted(RUN + PHASE_COLUMNS + SLOT_COLUMNS) == sorted(f.name for f in record)
    for f in record:       # a slot's field is made from a field the arrays carry
        assert f.source in rt.SOURCES
        assert f.source != "slot" or rt.ARRAYS in next(
            g.layers for g in rt.TABLE if g.name == f.source_field), f.name


def test_the_records_tables_columns_are_the_tables(tmp_path):
    with Store(str(tmp_path)):
        pass
    db = sqlite3.connect(tmp_path / "results.db")
    got = [r[1:4] for r in db.execute("PRAGMA table_info(records)")]
    db.close()
    assert got == [(f.name, f.sql.split()[0], int("NOT NULL" in f.sql))
                   for f in _layer(rt.RECORD)]


def test_the_outcome_makes_each_records_field_from_its_source():
    """Every result field a record carries reaches it from the arrays (divided where the
    table says so), every phase field from the phase, every place field from the
    assignment: values all different from their defaults, so none comes from elsewhere."""
    res = Result(start_ns=T + 11, end_ns=T + 2_000_000_013, elapsed_ns=2_000_000_002,
                 armed_ns=T - 5, ops=17, bytes=4099, status="timeout", error="late",
                 metrics={"m": 1.5}, hist={4: 2}, extra={"x": "y"}, samples=[(T + 12, 1.0)],
                 sample_unit="ops")
    phase = Phase(6, TaskSpec("tk", "null", {}), "null", "v", 3, 1, "spread", "core",
                  {"size": 8}, "tk|8")
    work = {"n": [Assignment(SlotPlace(4, 9, (9,), True), 0)]}
    done = collect("r", phase, [Node("n", 5, ())], work, T, {"n": SlotResults.of({4: res})})
    rec = done.records[0]
    for f in _layer(rt.RECORD):
        value = getattr(rec, f.name)
        if f.source == "slot":
            want = getattr(res, f.source_field)
            want = want / f.per if f.per else want
            if f.name in ("metrics", "extra"):       # the coordinator adds to them
                assert want.items() <= value.items(), f.name
            else:
                assert value == want, f.name
    assert [getattr(rec, n) for n in PHASE_COLUMNS] == [6, "tk", "null", "v", 3, 1, {"size": 8}]
    assert [getattr(rec, n) for n in RUN] == ["r", T]
    assert (rec.node, rec.slot, rec.cpu) == ("n", 4, 9)
    assert done.records.record(0) == rec == done.records.passing()[0]


def test_a_field_added_to_the_table_reaches_every_layer(tmp_path):
    """Two fields added to the table, one line each (a count every slot has, a note only
    some have; tests/added_field.py), before manybench is imported: a kernel's Result
    carries them, the node's arrays, the wire, the phase's columns, the stored record (a
    new file's and, migrated, an older file's, whose records get the default) and the
    export."""
    old, new = tmp_path / "old", tmp_path / "new"
    phase = Phase(7, TaskSpec("t", "null", {}), "null", "", 0, 1, "spread", "core", {}, "t")
    with Store(str(old)) as st:
        st.begin_run("r", Plan(name="p", tasks=[phase.task], source="", raw={}), [], {})
        st.write_phase("r", phase, T, [Record(run="r", phase=7, task="t", kernel="null",
                                              variant="", rep=0, workers=1, node="n", slot=0,
                                              cpu=0, t0_ns=T, params={})])
    new.mkdir()
    out = subprocess.run([sys.executable, os.path.join(HERE, "added_field.py"), str(old),
                          str(new)], check=False, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["result_defaults"] == [0, ""]
    assert got["arrays"] == got["wire"] == [[3, 5], {"0": "slow"}]
    assert got["arrays_result"] == [3, "slow", ""]
    assert got["columns"] == [[3, 5], ["slow", ""]]
    version = schema.SCHEMA_VERSION + 1
    mine = [[0, 0, 3, "slow"], [0, 1, 5, ""]]
    exported = [{"phase": p, "slot": s, "retries": n, "note": x} for p, s, n, x in mine]
    records, rows, columns, v = got["new"]
    assert (records, rows, v) == (mine, exported, version)
    assert ["retries", "INTEGER", 1] in columns and ["note", "TEXT", 1] in columns
    records, rows, columns, v = got["old"]
    assert (records, v) == ([*mine, [7, 0, 0, ""]], version)      # its own: the defaults
    assert rows[-1] == {"phase": 7, "slot": 0, "retries": 0, "note": ""}
    order = got["columns_order"]
    assert order[order.index("bytes") + 1] == "retries"
    assert order[order.index("error") + 1] == "note"
