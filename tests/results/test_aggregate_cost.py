"""What storing a phase's aggregates costs (issue 30: they doubled the coordinator's CPU per
phase at 1,000 x 64): the aggregate of a 64,000-record phase, made a column at a time, equals
the one made a record at a time (agg_reference.py, int30's) JSON for JSON, on the records a
simulated run makes and on mixed ones; and making it calls no Python function per record
(the calls counted at 6,400 and at 64,000 records are the same)."""
from __future__ import annotations

import json
import sys

import pytest

import agg_reference
from manybench.analysis import aggregates
from manybench.record import Record
from manybench.record_columns import SLOT_COLUMNS, RecordColumns
from manybench.results import aggregate_rows
from manybench.results.contract import StoredPhase

T0 = 1_795_772_609_611_232_923
SLOTS = 64


def _phase(kernel: str = "null", task: str = "sync") -> StoredPhase:
    return StoredPhase(run="r", index=3, task=task, kernel=kernel, variant="", rep=0,
                       workers=64_000, point="p", params={}, t0_ns=T0, status="ok",
                       label=task, go_ns=T0 - 40_000_000)


def _simulated(nodes: int, odd: int = 0) -> list[Record]:
    """A phase's records as node/simulated.py makes them (one shape of metrics, every slot
    ok, armed in time), `odd` of them late, failed, carrying bytes or a histogram."""
    out = []
    for n in range(nodes, 0, -1):            # arrive out of order: the aggregate sorts them
        for s in range(SLOTS):
            i = n * SLOTS + s
            start = T0 + 200 + i % 997 * 50
            out.append(Record(
                run="r", phase=3, task="sync", kernel="null", variant="", rep=0,
                workers=nodes * SLOTS, node=f"sim{n:04d}", slot=s, cpu=s, t0_ns=T0,
                start_ns=start, end_ns=start + 100_000, elapsed_s=1e-4, ops=1, bytes=0,
                status="ok", error="", params={},
                metrics={"clock_offset_ns": i % 613 - 300, "clock_error_ns": 19_000 + i % 7919,
                         "lead_ns": 44_003_007, "armed_late_ns": 0},
                hist=None, extra={"armed_ns": T0 - 1000, "rank": i}))
    for k in range(odd):                      # the same few whatever the phase's size
        r = out[k * 37]
        if k % 4 == 0:
            r.metrics["armed_late_ns"] = 5_000_000 + k
        elif k % 4 == 1:
            r.status, r.error = "failed", "boom"
        elif k % 4 == 2:
            r.start_ns += 300_000 + k
            r.bytes = 4096 * k
        else:
            r.hist = {10: k, 12: 1}
    return out


def _mixed() -> list[Record]:
    """Records naming different metrics, of mixed kinds, bound cpus, a group's two tasks,
    late ones of every cause."""
    out = []
    for n in range(40):
        for s in range(30):
            m = {"x": n * 1.5 + s, "cpus_allowed": f"{s % 4}", "cpus_used_share": s / 29,
                 "rate.unit": "MB/s" if s % 3 else "GB/s", "flag": bool(s % 2)}
            if s % 4 == n % 4:                       # a count, not every record's
                m["exit_status"] = s % 3
            if s % 5 == 0:
                m["y"] = "text" if n % 2 else 7         # a metric of mixed kinds
            if s % 7 == 0:
                m.pop("x")
            if s == 29 and n % 3 == 0:               # late, its cpu busy with other work
                m["cpu_busy"] = 1
            if s == 28:                               # armed late
                m["armed_late_ns"] = 1000 + n
            task, kernel = ("a", "null") if s % 2 else ("b", "io.write")
            out.append(Record(
                run="r", phase=3, task=task, kernel=kernel, variant="", rep=0, workers=1200,
                node=f"n{n:02d}", slot=s, cpu=9 if s == 29 else s % 4, t0_ns=T0,
                start_ns=T0 + 10 * s + (200_000 if s in (27, 29) else 0),
                end_ns=T0 + 10_000 + s, elapsed_s=0.0 if s % 9 == 0 else 1e-5 * (s + 1),
                ops=s, bytes=1024 * s, status="ok" if (n + s) % 11 else "failed", error="",
                params={"size": 1}, metrics=m, hist={5: s} if s % 2 else None,
                extra={"missing_metrics": ["z"]} if s == 3 else {}))
    return out


def _reference(info: StoredPhase, records: list[Record]) -> str:
    real = aggregates.part_aggregate
    aggregates.part_aggregate = agg_reference.part_aggregate
    try:
        return aggregate_rows.phase_text(info, records)
    finally:
        aggregates.part_aggregate = real


def test_a_64000_record_phase_aggregates_as_a_record_at_a_time_did():
    recs = _simulated(1000, odd=12)
    got = aggregate_rows.phase_text(_phase(), recs)
    assert got == _reference(_phase(), recs)
    part = json.loads(got)[0]
    assert part["records"] == 64_000 and part["late"]["late_slots"] == 6
    assert part["status"] == {"ok": 63_997, "failed": 3}


@pytest.mark.parametrize("kernel", ["null", "command", "group"])
def test_mixed_records_aggregate_as_a_record_at_a_time_did(kernel):
    from manybench.model import GROUP_KERNEL
    info = _phase(GROUP_KERNEL if kernel == "group" else kernel, "g")
    recs = _mixed()
    assert aggregate_rows.phase_text(info, recs) == _reference(info, recs)


def test_a_phase_of_columns_aggregates_as_its_records_do():
    recs = _simulated(100, odd=8)
    cols = RecordColumns("r", T0)
    for r in recs:
        cols.add(("3", "sync", "null", "", 0, 6400, {}),
                 **{n: getattr(r, n) for n in SLOT_COLUMNS})
    cols.phase_values = [(3, "sync", "null", "", 0, 6400, {})] * len(recs)
    assert aggregate_rows.phase_text(_phase(), cols) == _reference(_phase(), recs)


def _python_calls(records: list[Record]) -> int:
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"
    sys.setprofile(count)
    try:
        aggregate_rows.phase_text(_phase(), records)
    finally:
        sys.setprofile(None)
    return calls


def test_aggregating_a_phase_calls_no_python_function_per_record():
    small, large = _simulated(100, odd=12), _simulated(1000, odd=12)
    aggregate_rows.phase_text(_phase(), small)      # caches filled
    # int30's called 6 or more per record (late.is_late, armed_late_ns, generators...)
    assert _python_calls(large) == _python_calls(small)
