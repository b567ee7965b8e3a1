"""Run as a program (tests/results/test_record_table.py): the record table with two fields added, as a
maintainer would add them (one line each, the results schema's version bumped), before any
other module of manybench is imported; then the fields followed from a kernel's Result to
the stored, migrated and exported record. Prints what each layer got, as one JSON object.

  python added_field.py OLD_DIR NEW_DIR    OLD_DIR: a results directory of this schema, one
                                            phase stored; NEW_DIR: an empty one
"""
from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
import sys

from manybench import record_table as rt

# a count every slot has (after bytes), and a note only some slots have (after error)
RETRIES = rt.Field("retries", "int", "INTEGER NOT NULL", 0)
NOTE = rt.Field("note", "str", "TEXT NOT NULL", "", sparse=True)
names = [f.name for f in rt.TABLE]
table = list(rt.TABLE)
table.insert(names.index("bytes") + 1, RETRIES)
table.insert(names.index("error") + 2, NOTE)
rt.TABLE = tuple(table)

# imported once the table is changed: each layer is made from it at import
from manybench.engines.base import Node
from manybench.kernels.base import Result
from manybench.model import Phase, Plan, TaskSpec
from manybench.node import protocol
from manybench.node.arrays import SlotResults
from manybench.node.protocol import Assignment, Finished, SlotPlace
from manybench.record import COLUMNS
from manybench.results import schema
from manybench.results.export import export
from manybench.results.store import Store
from manybench.run.outcome import collect

# the schema version that adds their columns
schema.SCHEMA_VERSION += 1
rt.TABLE = tuple(dataclasses.replace(f, since=schema.SCHEMA_VERSION) if f in (RETRIES, NOTE)
                 else f for f in rt.TABLE)

T = 1_700_000_000_000_000_000
old_dir, new_dir = sys.argv[1:3]
got: dict = {"result_defaults": [Result().retries, Result().note]}

arrays = SlotResults.of({0: Result(start_ns=T + 1, end_ns=T + 2, ops=1, retries=3, note="slow"),
                         1: Result(start_ns=T + 1, end_ns=T + 3, ops=1, retries=5)})
got["arrays"] = [arrays.retries, arrays.note]
got["arrays_result"] = [arrays.result(0).retries, arrays.result(0).note,
                        arrays.result(1).note]
came = protocol.decode(protocol.encode(Finished(arrays, [], [])), "test").results
got["wire"] = [came.retries, came.note]

phase = Phase(0, TaskSpec("t", "null", {}), "null", "", 0, 2, "spread", "core", {}, "t")
work = {"n": [Assignment(SlotPlace(0, 0, (0,), True), 0),
              Assignment(SlotPlace(1, 1, (1,), True), 1)]}
done = collect("r", phase, [Node("n", 2, ())], work, T, {"n": came})
got["columns"] = [list(done.records.column("retries")), list(done.records.column("note"))]


def stored(directory: str, records, begin: bool) -> tuple[list, list, list, int]:
    """The phase stored (begin: in a new run "r", else beside run "r"'s stored phases); what
    reads back, its export, the records table's columns and the file's version."""
    with Store(directory) as st:
        if begin:
            st.begin_run("r", Plan(name="p", tasks=[phase.task], source="", raw={}), [], {})
        st.write_phase("r", phase, T, records)
        back = st.records("r")
    out = io.StringIO()
    export(back, "json", out)
    db = sqlite3.connect(f"{directory}/results.db")
    cols = [r[1:4] for r in db.execute("PRAGMA table_info(records)")]
    version = db.execute("PRAGMA user_version").fetchone()[0]
    db.close()
    return ([(r.phase, r.slot, r.retries, r.note) for r in back],
            [{k: row[k] for k in ("phase", "slot", "retries", "note")}
             for row in json.loads(out.getvalue())], cols, version)


got["new"] = stored(new_dir, done.records, True)            # as columns
got["old"] = stored(old_dir, [dataclasses.replace(r) for r in done.records], False)  # Records
got["columns_order"] = list(COLUMNS)
print(json.dumps(got))
