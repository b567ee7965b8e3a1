"""Runs of io.write built by hand for the history and compare tests: each point's phases
have a one-second window, so a point's aggregate bandwidth is the bytes its phase moved."""
from __future__ import annotations

import sqlite3

from manybench.model import Phase, Plan, TaskSpec
from manybench.plan.expand import point_key
from manybench.record import Record
from manybench.results.contract import RunNotes, StoredNode
from manybench.results.store import Store, db_path

S = 1_000_000_000
T = 1_795_000_000 * S          # 2026-11-18
MiB, GiB = 1 << 20, 1 << 30
PARAMS = {"block": MiB, "dir": None, "direct": False, "fallocate": True, "file": "io.dat",
          "fsync": "end", "size": 64 * MiB, "wear_out": False}


def io_run(directory: str, run: str, points: list[tuple[int, dict, list[float]]],
           started_ns: int = T, host: str = "vm") -> None:
    """A finished run of task "write" (io.write) in `directory`: per point (workers, params
    changed from PARAMS, its aggregate bandwidth in each repetition, B/s)."""
    spec = TaskSpec("write", "io.write", {})
    st = Store(directory)
    st.begin_run(run, Plan(name="io", tasks=[spec], source='name = "io"\n',
                           raw={"name": "io"}), ["manybench"], {"hostname": host}, RunNotes())
    st.write_nodes(run, [StoredNode(run, "n1", "127.0.0.1", 2, 2,
                                    inventory={"hostname": host})])
    index = 0
    for pair, (workers, changed, rates) in enumerate(points):
        params = {**PARAMS, **changed}
        key = point_key("write", "", workers, "spread", "core", params, pair=pair)
        for rep, rate in enumerate(rates):
            t0 = started_ns + index * 10 * S
            records = [Record(run=run, phase=index, task="write", kernel="io.write",
                              variant="", rep=rep, workers=workers, node="n1", slot=s, cpu=s,
                              t0_ns=t0, start_ns=t0, end_ns=t0 + S, elapsed_s=1.0,
                              ops=int(rate / workers) // MiB,
                              bytes=int(rate / workers), params=params)
                       for s in range(workers)]
            st.write_phase(run, Phase(index, spec, "io.write", "", rep, workers, "spread",
                                      "core", params, key), t0, records)
            index += 1
    st.end_run(run, "finished")
    st.close()
    db = sqlite3.connect(db_path(directory))
    db.execute("UPDATE runs SET started_ns=? WHERE id=?", (started_ns, run))
    db.commit()
    db.close()
