"""The record path's C helpers (_native: json_items, shift_stamps, slot_metrics, slot_extra)
give exactly what the Python beside each call gives (the reference, used without the
extension), and a phase stored through them is the phase stored through the reference path,
row for row and byte for byte."""
from __future__ import annotations

import io
import math
import sqlite3
from pathlib import Path

import pytest

from manybench import _native
from manybench.engines import base as engine_base
from manybench.engines.base import Node
from manybench.kernels import Result
from manybench.model import Phase, Plan, TaskSpec
from manybench.node.arrays import SlotResults
from manybench.node.protocol import Assignment, SlotPlace
from manybench.results import record_rows as store_mod
from manybench.results.export import export
from manybench.results.record_rows import _dumps_each, _dumps_one
from manybench.results.store import Store
from manybench.run import outcome
from manybench.run.outcome import collect
from manybench.run.stalls import flag_stalls

T = 1_700_000_000_000_000_000

# values whose text a scan could cut wrongly, or that orjson writes otherwise than json
AWKWARD = [{}, {"a": "],}{[\\\"", "b": ["x", {"c": [1, [2, {}]]}]}, {"q": '"', "bs": "\\"},
           {"uni": "é\u2603\U0001f600", "ctl": "\n\t\x01"}, {"none": None, "t": "/dev/null"},
           {"nan": float("nan")}, {"inf": math.inf, "ninf": -math.inf}, {"big": 2**70},
           {1: "int key", 2.5: "float key"}, {"path": Path("/tmp/x")}, {"f": 1.5e-05, "i": -7},
           {"deep": [[[["]"]]]]}, {"s": "null"}, {"e": ""}]


def test_json_items_cut_a_column_as_each_value_alone():
    got = _dumps_each(AWKWARD)
    assert got == [_dumps_one(v) for v in AWKWARD]          # the reference, text for text
    assert _dumps_each([]) == []


def test_json_items_refuses_what_is_not_an_array():
    for bad in (b"", b"{}", b"[1,2", b'["a]', b"[1] x"):
        with pytest.raises(ValueError, match="not a JSON array"):
            _native.json_items(bad)


def test_one_value_orjson_refuses_sends_the_column_one_by_one(monkeypatch):
    values = [{"a": 1}, {"huge": 2**70}, {"b": float("nan")}]
    fast = _dumps_each(values)
    monkeypatch.setattr(store_mod, "_json_items", None)
    assert fast == _dumps_each(values) == [_dumps_one(v) for v in values]


def test_shift_stamps_is_the_python_expression():
    stamps, off = [0, 1, T, T + 123, -5, 2**62], -4_000_321
    assert _native.shift_stamps(stamps, off) == [t - off if t else 0 for t in stamps]
    assert _native.shift_stamps([], 5) == []
    # not all ints of 64 bits, or a difference past them: the Python does it
    for odd in ([2**64], [1.5], [2**63 - 1]):
        assert _native.shift_stamps(odd, -10) is None
        assert engine_base._shifted(odd, -10) == [t + 10 if t else 0 for t in odd]
    assert engine_base._shifted([5], 2**70) == [5 - 2**70]      # an offset past 64 bits


def _slot_inputs():
    ms = [None, {}, {"cpus_allowed": "1", "clock_offset_ns": 9}, {"x": float("nan")}]
    armed = [0, T - 5, T + 7, 2**70]
    xs = [None, {}, {"note": "n", "rank": 99}, {"series": [1]}]
    return ms, armed, xs, [0, 1, 2, 3]


def test_slot_metrics_and_extra_are_the_python_loops(monkeypatch):
    ms, armed, xs, ranks = _slot_inputs()
    clock = {"clock_offset_ns": -50, "clock_error_ns": 3, "lead_ns": 10}
    fast_m = outcome._slot_metrics(ms, clock, armed, T)
    fast_x = outcome._slot_extra(xs, armed, ranks)
    monkeypatch.setattr(outcome, "_native", None)
    ref_m = outcome._slot_metrics(ms, clock, armed, T)
    ref_x = outcome._slot_extra(xs, armed, ranks)
    # same keys in the same order, same values (NaN compared as text)
    assert [repr(list(d.items())) for d in fast_m] == [repr(list(d.items())) for d in ref_m]
    assert [repr(list(d.items())) for d in fast_x] == [repr(list(d.items())) for d in ref_x]
    assert all(d is not m for d, m in zip(fast_m, ms))        # copies, not the node's own
    # a value that is no dict: the Python's answer (and its error) stand
    assert _native.slot_metrics([[("a", 1)]], clock, [0], T, "late") is None
    assert _native.slot_extra([[("a", 1)]], [0], [0], "armed_ns", "rank") is None


def _phase_results() -> tuple[list[Node], dict, dict[str, SlotResults]]:
    """Three nodes: one whole, one answering in another order and missing a slot, one
    silent; awkward metrics, extras and histograms."""
    nodes = [Node("a'1", 3, (), offset_ns=5_000, error_ns=40),
             Node("b", 2, (), offset_ns=-7_000, error_ns=60), Node("c", 1, ())]
    work = {"a'1": [Assignment(SlotPlace(s, s, (s,), True), s) for s in range(3)],
            "b": [Assignment(SlotPlace(s, 10 + s, (s,), True), 3 + s) for s in range(2)],
            "c": [Assignment(SlotPlace(0, 0, (0,), True), 5)]}
    a = {s: Result(start_ns=T + 100 + s, end_ns=T + 900, elapsed_ns=800 + s, armed_ns=T - 50,
                   ops=3, bytes=2**40, metrics=AWKWARD[(s * 4) % len(AWKWARD)] | {"k": s},
                   hist={3: 7} if s else None, extra=AWKWARD[s + 1])
         for s in range(3)}
    b = {1: Result(start_ns=T + 120, end_ns=T + 700, elapsed_ns=580, armed_ns=T + 30, ops=1,
                   metrics={"big": 2**70, "nan": float("nan")})}
    return nodes, work, {"a'1": SlotResults.of(a), "b": SlotResults.of(b)}


def _stored(tmp: Path, reference: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The phase made and stored through the C helpers, or through the reference (the
    Python loops, each record one by one into the statement binding every value)."""
    with monkeypatch.context() as m:
        if reference:
            m.setattr(outcome, "_native", None)
            m.setattr(store_mod, "_json_items", None)
        nodes, work, results = _phase_results()
        spec = TaskSpec("sync'é", "null", {})
        phase = Phase(2, spec, "null", "v'1", 1, 6, "spread", "core", {"n": [1, "x'"]}, "p")
        done = collect("run'1", phase, nodes, work, T, results, missing="no reply",
                       go_ns=T - 1_000)
        flag_stalls(done.records)
        if reference:
            done.records.records()            # made: the store takes them one by one
        st = Store(tmp)
        st.begin_run("run'1", Plan(name="p", tasks=[spec], source="", raw={}), [], {})
        st.write_phase("run'1", phase, T, done.records, go_ns=T - 1_000)
        st.close()
    db = sqlite3.connect(tmp / "results.db")
    rows = db.execute("SELECT * FROM records ORDER BY node, slot").fetchall()
    types = db.execute("SELECT " + ", ".join(f"typeof({c})" for c in
                                             ("run", "phase", "t0_ns", "params", "rep"))
                       + " FROM records").fetchall()
    db.close()
    return rows + types


@pytest.mark.parametrize("share_from", [1, store_mod.SHARE_MIN_ROWS])
def test_a_phase_stored_through_the_helpers_is_the_reference_phase(tmp_path, monkeypatch,
                                                                   share_from):
    # share_from 1: the shared values written into the statement (a large phase's way)
    monkeypatch.setattr(store_mod, "SHARE_MIN_ROWS", share_from)
    fast = _stored(tmp_path / "fast", False, monkeypatch)
    ref = _stored(tmp_path / "ref", True, monkeypatch)
    assert len(fast) > 6 and fast == ref
    outs = []
    for d in ("fast", "ref"):
        out = io.StringIO()
        with Store(tmp_path / d, readonly=True) as st:
            export(st.records("run'1"), "json", out)
        outs.append(out.getvalue())
    assert outs[0] == outs[1] and "no reply" in outs[0]


def test_a_shared_value_sql_cannot_hold_is_bound_with_every_row(tmp_path, monkeypatch):
    # a NUL in the run's name: not written into the statement, bound as before
    assert store_mod._sql_literal("a\x00b") is None and store_mod._sql_literal(2**63) is None
    assert store_mod._sql_literal("it's") == "'it''s'" and store_mod._sql_literal(-3) == "-3"
    monkeypatch.setattr(store_mod, "SHARE_MIN_ROWS", 1)
    nodes, work, results = _phase_results()
    spec = TaskSpec("t", "null", {})
    phase = Phase(0, spec, "null", "", 0, 6, "spread", "core", {}, "p")
    done = collect("r\x00n", phase, nodes, work, T, results, go_ns=T - 1_000)
    st = Store(tmp_path)
    st.write_phase("r\x00n", phase, T, done.records)
    st.close()
    db = sqlite3.connect(tmp_path / "results.db")
    assert {r[0] for r in db.execute("SELECT run FROM records")} == {"r\x00n"}
    assert db.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 6
    db.close()


def test_the_scheduler_learns_from_node_maxima_what_it_learnt_slot_by_slot():
    from manybench.run.coordinator import _armed_and_started
    from manybench.run.schedule import Scheduler
    ok = SlotResults.of({s: Result(start_ns=T + 10 * s, end_ns=T + 99, armed_ns=T - s, ops=1)
                         for s in range(4)})
    mixed = SlotResults.of({0: Result(start_ns=T + 5_000_000, armed_ns=T + 7, ops=1),
                            1: Result(status="error", error="x", start_ns=T + 9 * 10**9,
                                      armed_ns=T + 10**9),
                            2: Result(status="ok")})          # ok, never stamped
    for results in ({"a": ok}, {"a": ok, "b": mixed}, {"b": mixed}, {}):
        slot_by_slot = [(a, s) for arr in results.values()
                        for a, s, st in zip(arr.armed_ns, arr.start_ns, arr.status)
                        if st == "ok"]
        armed, started = _armed_and_started(results)
        ref_armed = [a for a, _ in slot_by_slot if a]
        ref_started = [s for _, s in slot_by_slot if s]
        assert bool(armed) == bool(ref_armed)
        assert max(armed, default=0) == max(ref_armed, default=0)
        assert max(started, default=0) == max(ref_started, default=0)
        one, two = Scheduler(), Scheduler()
        one.observe(T - 10**6, T, armed, started)
        two.observe(T - 10**6, T, ref_armed, ref_started)
        assert (one.samples, one.late, one.armed_late, one.gain_ns) == \
               (two.samples, two.late, two.armed_late, two.gain_ns)


def test_a_records_own_values_one_for_the_whole_phase_are_written_once(tmp_path, monkeypatch):
    """Every slot ok, no error, no histogram, the same ops and bytes (a phase of 64,000 null
    slots): written into the statement once, stored exactly as bound one by one; a value
    that differs in one record is bound with every row."""
    monkeypatch.setattr(store_mod, "SHARE_MIN_ROWS", 1)
    nodes = [Node("a", 3, ()), Node("b", 2, ())]
    work = {n.name: [Assignment(SlotPlace(s, s, (s,), True), 3 * i + s) for s in range(n.slots)]
            for i, n in enumerate(nodes)}

    def results(odd_bytes: bool) -> dict:
        return {n.name: SlotResults.of({s: Result(start_ns=T + 10, end_ns=T + 90 + s,
                                                  elapsed_ns=80, armed_ns=T - 5, ops=1,
                                                  bytes=7 if odd_bytes and s == 1 else 0)
                                        for s in range(n.slots)}) for n in nodes}
    phase = Phase(0, TaskSpec("t", "null", {}), "null", "", 0, 5, "spread", "core", {}, "p")
    stored = {}
    for how in ("alike", "odd", "reference"):
        done = collect("r", phase, nodes, work, T, results(how == "odd"), go_ns=T - 1_000)
        statements = []
        st = Store(tmp_path / how)
        write = st._write
        st._write = lambda pairs: write([statements.append(sql) or (sql, p) for sql, p in pairs])
        st.write_phase("r", phase, T, done.records if how != "reference"
                       else list(done.records))
        st.close()
        insert = next(s for s in statements if s.startswith("INSERT INTO records"))
        cols = insert[insert.index("(") + 1:insert.index(")")].split(", ")
        values = insert[insert.index("VALUES (") + 8:-1].split(", ")
        stored[how] = dict(zip(cols, values))
        db = sqlite3.connect(tmp_path / how / "results.db")
        stored[how, "rows"] = db.execute(
            "SELECT *, typeof(ops), typeof(bytes), typeof(status), typeof(error), "
            "typeof(hist) FROM records ORDER BY node, slot").fetchall()
        db.close()
    alike = stored["alike"]
    assert (alike["ops"], alike["bytes"], alike["status"], alike["error"], alike["hist"]) == (
        "1", "0", "'ok'", "''", "NULL")
    assert stored["odd"]["bytes"] == "?" and stored["odd"]["status"] == "'ok'"
    assert stored["alike", "rows"] == stored["reference", "rows"]
    assert len(stored["alike", "rows"]) == 5
