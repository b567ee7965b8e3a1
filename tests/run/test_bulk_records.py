"""A phase's results as arrays into records and results.db in bulk (issue 21): stamps moved into
the coordinator's clock once, as arrays (engines/base.py); a failed slot's zero stamps stay
zero; metrics, extra, histograms and samples intact; the stored records read exactly as a
fixed expectation."""
from __future__ import annotations

import io
import json

from fake_engine import FakeEngine

from manybench.engines.base import Node
from manybench.kernels import Result
from manybench.model import Phase, Plan, TaskSpec
from manybench.node.arrays import SlotResults
from manybench.node.protocol import Assignment, SlotPlace
from manybench.results.export import export
from manybench.results.store import Store
from manybench.run.outcome import collect
from manybench.run.stalls import flag_stalls

T = 1_700_000_000_000_000_000
OFF = {"a": 5_000, "b": -7_000}      # node clock minus coordinator clock


def _answer(e: FakeEngine) -> dict:
    """Two nodes answering in their own clocks, as arrays."""
    a = {0: Result(start_ns=T + OFF["a"] + 100, end_ns=T + OFF["a"] + 900, elapsed_ns=800,
                   armed_ns=T + OFF["a"] - 50, ops=3, bytes=4096,
                   metrics={"lat_p50_us": 2.5}, hist={3: 7}, extra={"note": "x"},
                   samples=[(T + OFF["a"] + 500, 1.0), (T + OFF["a"] + 900, 3.0)],
                   sample_unit="ops"),
         1: Result(status="error", error="prepare: no space")}      # no stamps at all
    b = {0: Result(start_ns=T + OFF["b"] + 120, end_ns=T + OFF["b"] + 700, elapsed_ns=580,
                   armed_ns=T + OFF["b"] - 30, ops=1)}
    return {"a": SlotResults.of(a), "b": SlotResults.of(b)}


def _engine() -> FakeEngine:
    return FakeEngine(nodes=[Node("a", 2, (), offset_ns=OFF["a"], error_ns=40),
                             Node("b", 1, (), offset_ns=OFF["b"], error_ns=60)],
                      answer=_answer)


def _phase() -> Phase:
    return Phase(4, TaskSpec("t", "null", {}), "null", "", 1, 3, "spread", "core",
                 {"size": 4096}, "t|4096|3")


def _work() -> dict:
    return {"a": [Assignment(SlotPlace(0, 2, (2,), True), 0),
                  Assignment(SlotPlace(1, 3, (3,), True), 2)],
            "b": [Assignment(SlotPlace(0, 0, (0,), True), 1)]}


def test_stamps_move_into_the_coordinators_clock_once_as_arrays():
    engine = _engine()
    engine.go(T)
    assert engine.sent == {"a": T + OFF["a"], "b": T + OFF["b"]}
    got = engine.results()
    assert isinstance(got["a"], SlotResults)
    a, b = got["a"], got["b"]
    assert a.slot == [0, 1]
    assert (a.start_ns, a.end_ns, a.armed_ns) == ([T + 100, 0], [T + 900, 0], [T - 50, 0])
    assert (b.start_ns, b.end_ns, b.armed_ns) == ([T + 120], [T + 700], [T - 30])
    assert a.samples == {0: [[T + 500, T + 900], [1.0, 3.0]]}
    assert (a.metrics, a.extra, a.hist) == ({0: {"lat_p50_us": 2.5}}, {0: {"note": "x"}},
                                            {0: {3: 7}})
    assert engine.results() == got            # asked again: moved once, from the node's


def _outcome():
    engine = _engine()
    engine.go(T)
    return collect("r", _phase(), engine.nodes, _work(), T, engine.results(), go_ns=T - 2_000)


def test_a_phases_records_come_from_the_arrays_whole():
    done = _outcome()
    by = {(r.node, r.slot): r for r in done.records}
    assert [(r.node, r.slot) for r in done.records] == [("a", 0), ("a", 1), ("b", 0)]
    ok, failed, other = by["a", 0], by["a", 1], by["b", 0]
    assert (ok.start_ns, ok.end_ns, ok.elapsed_s, ok.ops, ok.bytes) == (T + 100, T + 900,
                                                                          8e-7, 3, 4096)
    assert (failed.start_ns, failed.end_ns, failed.status, failed.error) == (
        0, 0, "error", "prepare: no space")
    assert "armed_ns" not in failed.extra and failed.metrics["clock_offset_ns"] == OFF["a"]
    assert ok.metrics == {"lat_p50_us": 2.5, "clock_offset_ns": OFF["a"], "clock_error_ns": 40,
                          "armed_late_ns": 0, "lead_ns": 2_000}
    assert ok.extra == {"note": "x", "armed_ns": T - 50, "rank": 0} and ok.hist == {3: 7}
    assert (other.cpu, other.extra["rank"], other.metrics["clock_error_ns"]) == (0, 1, 60)
    assert all(r.params == {"size": 4096} and r.t0_ns == T and r.workers == 3
               for r in done.records)
    assert [(s.node, s.rank, s.t_s, s.done, s.unit) for s in done.samples] == [
        ("a", 0, 500e-9, 1.0, "ops"), ("a", 0, 900e-9, 3.0, "ops")]


def test_a_phase_stored_in_bulk_reads_as_expected(tmp_path):
    """The phase's columns stored with one executemany read back as the records they are,
    byte for byte as the same records stored one by one, and as a fixed expectation."""
    import sqlite3
    stored_rows = {}
    for how in ("columns", "one by one"):
        done = _outcome()
        with Store(str(tmp_path / how)) as st:
            st.begin_run("r", Plan(name="p", tasks=[_phase().task], source="", raw={}), [], {})
            st.write_phase("r", done.phase, T, done.records if how == "columns"
                           else [r for r in done.records], samples=done.samples,
                           go_ns=T - 2_000)
            stored = st.records("r")
            samples = st.samples("r")
        db = sqlite3.connect(tmp_path / how / "results.db")
        stored_rows[how] = db.execute("SELECT * FROM records ORDER BY node, slot").fetchall()
        db.close()
        assert stored == list(done.records)
        assert [(s.t_s, s.done) for s in samples] == [(500e-9, 1.0), (900e-9, 3.0)]
    assert stored_rows["columns"] == stored_rows["one by one"]
    out = io.StringIO()
    export(stored, "json", out)
    rows = json.loads(out.getvalue())
    base = {"run": "r", "phase": 4, "task": "t", "kernel": "null", "variant": "", "rep": 1,
            "workers": 3, "t0_ns": T, "params": {"size": 4096}}
    assert rows == [
        {**base, "node": "a", "slot": 0, "cpu": 2, "start_ns": T + 100, "end_ns": T + 900,
         "elapsed_s": 8e-7, "ops": 3, "bytes": 4096, "status": "ok", "error": "",
         "metrics": {"lat_p50_us": 2.5, "clock_offset_ns": 5000, "clock_error_ns": 40,
                     "armed_late_ns": 0, "lead_ns": 2000}},
        {**base, "node": "a", "slot": 1, "cpu": 3, "start_ns": 0, "end_ns": 0,
         "elapsed_s": 0.0, "ops": 0, "bytes": 0, "status": "error",
         "error": "prepare: no space",
         "metrics": {"clock_offset_ns": 5000, "clock_error_ns": 40, "lead_ns": 2000}},
        {**base, "node": "b", "slot": 0, "cpu": 0, "start_ns": T + 120, "end_ns": T + 700,
         "elapsed_s": 5.8e-7, "ops": 1, "bytes": 0, "status": "ok", "error": "",
         "metrics": {"clock_offset_ns": -7000, "clock_error_ns": 60, "armed_late_ns": 0,
                     "lead_ns": 2000}}]


def _stalls_by_brute_force(records) -> dict[int, float]:
    """The definition (run/stalls.py), record by record against all its peers."""
    timed = [r for r in records if r.status == "ok" and r.end_ns and r.t0_ns]
    out = {}
    for r in timed:
        peers = sorted(p.end_ns - p.t0_ns for p in timed if p is not r and p.task == r.task)
        if not peers:
            continue
        typical = max(peers[(len(peers) - 1) // 2], 0)
        span = r.end_ns - r.t0_ns
        if span > 3.0 * typical and span - typical > 0.5e9:
            out[r.slot] = round((span - typical) / 1e9, 6)
    return out


def test_stalls_are_judged_against_each_records_peers_as_defined():
    """flag_stalls sorts each task's spans once (a phase of 64,000 slots); what it flags is
    the definition's: random phases of two tasks, ties and failed slots among them."""
    import random
    from builders import rec
    S = 1_000_000_000
    rnd = random.Random(21)
    for n in (2, 3, 4, 5, 17, 200):
        records = [rec(0, i, T, T + 10, T + rnd.choice([S // 10, S // 5, 2 * S, 3 * S]),
                       task=rnd.choice(["x", "y"]), status=rnd.choice(["ok"] * 5 + ["error"]))
                   for i in range(n)]
        want = _stalls_by_brute_force(records)
        got = {r.slot: r.metrics["stall_s"] for r in flag_stalls(records)}
        assert got == want, n


def test_a_phases_stalls_are_told_in_one_warning_per_task():
    """A thousand slots late at once are one event: one warning naming how many, on which
    nodes and by how much; each record keeps its own stall_s."""
    from manybench.record import Record
    from manybench.run.stalls import stall_texts

    def rec(node: str, slot: int, stall: float, task: str = "t") -> Record:
        return Record(run="r", phase=3, task=task, kernel="null", variant="", rep=0,
                      workers=64, node=node, slot=slot, cpu=slot, t0_ns=0, start_ns=1, end_ns=2,
                      elapsed_s=1e-9, ops=1, bytes=0, params={}, metrics={"stall_s": stall})

    many = [rec(f"n{i // 64:03d}", i % 64, 0.6 + i / 1e4) for i in range(640)]
    told = stall_texts(many + [rec("n999", 0, 0.7, task="other")])
    assert len(told) == 2
    node, task, phase, text = told[0]
    assert (node, task, phase) == ("", "t", 3)
    assert "640 slots on 10 nodes (n000, n001, n002, n003 and 6 more)" in text
    assert "0.600-0.664 s" in text
    assert told[1][0] == "n999" and "node n999 slot 0 ended 0.700 s" in told[1][3]


def test_every_nodes_records_share_the_phases_values_once():
    """The phase's values (index, task, kernel, variant, rep, workers, params) are one tuple
    for every node: the store then writes them once into the phase's insert instead of
    binding them with each of 64,000 rows (they were one per node, so a phase of two nodes
    or more bound them all)."""
    done = _outcome()
    assert done.records.one_phase_values is not None
    shared, rows = done.records.rows({})
    assert {k: shared[k] for k in ("phase", "task", "workers", "params")} == {
        "phase": 4, "task": "t", "workers": 3, "params": {"size": 4096}}
    assert len(list(rows)) == 3


def test_stalls_of_an_all_ok_phase_of_columns_are_the_definitions():
    """A phase whose every slot is ok (the common one, judged without a pass per record)
    flags what the definition flags, as columns and as Records."""
    import random
    from builders import rec
    from manybench.record_columns import SLOT_COLUMNS, RecordColumns
    S = 1_000_000_000
    rnd = random.Random(7)
    for n in (2, 3, 17, 300):
        records = [rec(0, i, T, T + 10, T + rnd.choice([S // 10, S // 5, 2 * S, 3 * S]))
                   for i in range(n)]
        want = _stalls_by_brute_force(records)
        cols = RecordColumns("r", T)
        for r in records:
            cols.add((r.phase, r.task, r.kernel, r.variant, r.rep, r.workers, r.params),
                     **{**{n: getattr(r, n) for n in SLOT_COLUMNS},
                        "metrics": dict(r.metrics), "extra": dict(r.extra)})
        assert {r.slot: r.metrics["stall_s"] for r in flag_stalls(cols)} == want, n
        assert {r.slot: r.metrics["stall_s"] for r in flag_stalls(records)} == want, n
