"""Analysis figures against hand-computed values (docs/definitions.md)."""
from __future__ import annotations

import pytest

from manybench.analysis import Dist, Spread, median, nearest_rank, phase_figures, summarize
from manybench.model import Phase, TaskSpec
from manybench.results.contract import StoredPhase

from builders import S, T, io_data, pinfo, rec


def test_nearest_rank():
    xs = list(range(1, 11))
    assert nearest_rank(xs, 0) == 1
    assert nearest_rank(xs, 50) == 5
    assert nearest_rank(xs, 90) == 9
    assert nearest_rank(xs, 99) == 10
    assert nearest_rank(xs, 100) == 10
    assert median([4, 1, 3, 2]) == 2          # lower middle, a measured value
    assert median([7]) == 7
    with pytest.raises(ValueError):
        nearest_rank([], 50)
    assert Dist.of([]) is None and Spread.of([3, 1, 2]) == Spread(1, 2, 3, 3)


# null point: 3 phases x 4 slots; per phase the lateness of each slot, each runs 1000 ns
NULL_LATENESS = [[10_000, 20_000, 30_000, 40_000],
                 [5_000, 5_000, 6_000, 105_000],
                 [0, 1_000, 2_000, 3_000]]


def null_data():
    records, phases = [], []
    for i, lats in enumerate(NULL_LATENESS):
        t0 = T + i * S
        phases.append(pinfo(i, "null-4", t0=t0))
        records += [rec(i, s, t0, t0 + lat, t0 + lat + 1000) for s, lat in enumerate(lats)]
    return records, phases


def test_null_phase_figures():
    records, _ = null_data()
    f = phase_figures(0, records[:4], "null", {})
    assert f.first_start_ns == T + 10_000 and f.last_end_ns == T + 41_000
    assert f.skew_ns == 30_000
    assert f.sync_overhead_ns == 31_000
    assert f.lateness_ns == [10_000, 20_000, 30_000, 40_000]
    assert f.bandwidth == 0 and f.stonewall_ns is None


def test_null_point_summary():
    records, phases = null_data()
    [s] = summarize(records, phases)
    assert (s.task, s.kernel, s.workers, s.phases, s.records, s.ok) == ("t", "null", 4, 3, 12, 12)
    # skews [30000, 100000, 3000] -> sorted [3000, 30000, 100000]
    assert s.skew == Dist(30_000, 100_000, 100_000, 3)
    # sync overheads [31000, 101000, 4000]
    assert s.sync_overhead == Dist(31_000, 101_000, 101_000, 3)
    # 12 latenesses: sorted 0,1k,2k,3k,5k,5k,6k,10k,20k,30k,40k,105k; median = rank 6, p99 = rank 12
    assert s.lateness == Dist(5_000, 105_000, 105_000, 12)
    assert s.bandwidth is None and s.ops_rate is None   # no bytes, no ops
    assert s.slot_elapsed == Spread(1e-6, 1e-6, 1e-6, 12)  # from stamps when elapsed_s is 0


def test_failed_records_counted_not_timed():
    records, phases = null_data()
    t0 = T + 2 * S
    records += [rec(2, 4, t0, 0, 0, status="lost"),
                rec(2, 5, t0, t0 + 9 * S, t0 + 10 * S, status="timeout", error="killed"),
                rec(2, 6, t0, t0 - S, t0, status="error", error="boom")]
    [s] = summarize(records, phases)
    assert (s.records, s.ok, s.error, s.timeout, s.lost) == (15, 12, 1, 1, 1)
    assert [r.status for r in s.failed] == ["lost", "timeout", "error"]
    assert s.skew == Dist(30_000, 100_000, 100_000, 3)        # unchanged
    assert s.lateness == Dist(5_000, 105_000, 105_000, 12)
    # a phase where nothing succeeded counts as a phase with no timing figures
    all_bad = [rec(0, 0, T, 0, 0, status="lost")]
    [s] = summarize(all_bad, [pinfo(0, "x")])
    assert (s.phases, s.ok, s.lost, s.skew, s.lateness, s.sync_overhead) == (1, 0, 1, None, None, None)


def test_aggregate_bandwidth():
    records, phases = io_data()
    [s] = summarize(records, phases)
    # 8 MiB over 2 s, then over 1 s: aggregate bandwidth = sum(bytes) / (last end - first start)
    assert [f.bandwidth for f in s.phase_figures] == [4 << 20, 8 << 20]
    bw, ops = s.bandwidth, s.ops_rate
    assert (bw.min, bw.median, bw.max, bw.n, bw.mean) == (4 << 20, 4 << 20, 8 << 20, 2, 6 << 20)
    assert (ops.min, ops.median, ops.max, ops.n, ops.mean) == (4.0, 4.0, 8.0, 2, 6.0)
    assert s.ops == 8 and s.bytes == 8 << 20                 # per phase, median
    assert s.slot_elapsed == Spread(1.0, 1.0, 2.0, 4)         # elapsed_s as the slot measured
    assert s.skew == Dist(0, 1000, 1000, 2)
    assert s.sync_overhead is None                          # only for null
    assert s.stonewall_bandwidth is None                    # no duration param


def test_stonewall():
    p = {"duration": 10.0, "block": 4096}
    # slot 0 runs 0..10 s moving 100 B; slot 1 runs 2..12 s moving 200 B
    records = [rec(0, 0, T, T, T + 10 * S, kernel="io.write", workers=2, params=p, bytes=100),
               rec(0, 1, T, T + 2 * S, T + 12 * S, kernel="io.write", workers=2, params=p,
                   bytes=200)]
    f = phase_figures(0, records, "io.write", p)
    assert f.stonewall_ns == 8 * S                     # min(end) - max(start)
    assert f.stonewall_bytes == pytest.approx(80 + 160)  # bytes_i * overlap / (end_i - start_i)
    assert f.stonewall_bandwidth == pytest.approx(30.0)  # 240 B / 8 s
    assert f.bandwidth == pytest.approx(300 / 12)        # aggregate: 300 B / 12 s
    [s] = summarize(records, [pinfo(0, "sw", kernel="io.write", workers=2, params=p)])
    assert s.stonewall_bandwidth.median == pytest.approx(30.0)
    # no overlap at all: no stonewall figure
    records[1].start_ns, records[1].end_ns = T + 11 * S, T + 12 * S
    assert phase_figures(0, records, "io.write", p).stonewall_ns is None


def test_plan_order_and_grouping():
    # interleaved phases of two points: summaries follow each point's first phase
    records, phases = [], []
    for i, key in enumerate(["b", "a", "b", "a"]):
        w = 2 if key == "b" else 1
        phases.append(pinfo(i, key, workers=w, t0=T))
        records += [rec(i, s, T, T + s, T + s + 10, workers=w) for s in range(w)]
    out = summarize(records, phases)
    assert [(s.point, s.workers, s.phases, s.records) for s in out] == [("b", 2, 2, 4), ("a", 1, 2, 2)]
    # without phase rows, records group by (task, variant, workers, params)
    out = summarize(records)
    assert [(s.workers, s.phases) for s in out] == [(2, 2), (1, 2)]
    # expanded phases, stored as the store does, give the same
    spec = TaskSpec("t", "null", {})
    objs = [StoredPhase.of("r", Phase(i, spec, "null", "", 0, p.workers, "spread", "core", {},
                                      p.point), T) for i, p in enumerate(phases)]
    assert [s.point for s in summarize(records, objs)] == ["b", "a"]


def test_metrics_latency_clock_and_commands():
    m = [{"lat_p50_us": 2.0, "lat_p99_us": 9.0, "clock_error_ns": 300, "exit_status": 0, "rate": 10.0},
         {"lat_p50_us": 4.0, "lat_p99_us": 7.0, "clock_error_ns": 900, "exit_status": 0, "rate": 30.0},
         {"lat_p50_us": 3.0, "lat_p99_us": 8.0, "clock_error_ns": 100, "exit_status": 0, "rate": 20.0},
         {"exit_status": 2, "rate": 1000.0}]
    records = [rec(0, i, T, T, T + 5, kernel="command", metrics=mm,
                   status="ok" if i < 3 else "error", error="" if i < 3 else "exit status 2")
               for i, mm in enumerate(m)]
    [s] = summarize(records, [pinfo(0, "c", kernel="command")])
    assert s.latency_us == {"p50": 3.0, "p99": 8.0} and s.latency_source == "metrics"
    assert s.clock_error_ns == 900
    assert s.metrics == {"rate": 20.0}          # extracted figures only, ok records only
    assert s.counts == {"exit_status": {0: 3, 2: 1}}   # every record's exit status
    assert s.error == 1


def test_latency_from_merged_histograms():
    pytest.importorskip("manybench.kernels.hist")
    # buckets below 64 hold one ns value each: 50 ops at 10 ns, 49 at 20 ns, 1 at 63 ns
    a = rec(0, 0, T, T, T + 5, kernel="io.write", hist={10: 30, 20: 49},
            metrics={"lat_p50_us": 999.0})
    b = rec(0, 1, T, T, T + 5, kernel="io.write", hist={10: 20, 63: 1})
    [s] = summarize([a, b], [pinfo(0, "h", kernel="io.write")])
    assert s.latency_source == "hist"       # merged, not the median of per-slot figures
    assert s.latency_us["p50"] == pytest.approx(0.010)
    assert s.latency_us["p99"] == pytest.approx(0.020)
    assert s.latency_us["max"] == pytest.approx(0.063)
