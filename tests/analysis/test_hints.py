"""Hints on constructed data with known answers: a knee, a fall, a straggler, cached reads,
data larger than memory, system cpu, a peak reached, a metric that matched nothing, a command
that failed writing to stderr; and the report shows them."""
from __future__ import annotations

from dataclasses import replace

from manybench.analysis import hints as H
from manybench.analysis.knees import knee
from manybench.analysis.efficiency import Efficiency, PointEfficiency
from manybench.analysis.points import PointSummary
from manybench.analysis.stats import Stats
from manybench.record import Record
from manybench.report.findings import column_writer
from manybench.results.contract import TelemetryRow

T = 1_700_000_000_000_000_000
GiB = 1 << 30


def _reps(x):
    """Three repetitions 1% apart: an interval narrow beside the changes these tests make."""
    return None if x is None else Stats.of([x * 0.99, x, x * 1.01])


def _point(workers, bw=None, ops=None, task="w", params=None, **kw):
    return PointSummary(point=f"{task}-{workers}-{params}", task=task, kernel="io.write",
                        variant="", workers=workers, params=params or {"block": 65536},
                        bandwidth=_reps(bw), ops_rate=_reps(ops), **kw)


def _rec(slot, secs, node="n1", phase=0, task="w", kernel="io.write", workers=5, **kw):
    return Record(run="r", phase=phase, task=task, kernel=kernel, variant="", rep=0,
                  workers=workers, node=node, slot=slot, cpu=slot, t0_ns=T, start_ns=T,
                  end_ns=T + int(secs * 1e9), elapsed_s=secs, params={"block": 65536}, **kw)


def test_knee_found_where_the_gain_falls_below_a_quarter_of_linear():
    series = [(1, 100.0), (2, 200.0), (4, 400.0), (8, 420.0), (16, 430.0)]
    assert knee(series) == ("saturates", 4, 8)
    assert knee([(1, 100.0), (2, 200.0), (4, 390.0), (8, 770.0)]) is None     # near linear
    assert knee([(1, 100.0), (2, 190.0), (4, 150.0)]) == ("falls", 2, 4)
    assert knee([(1, 100.0), (2, 200.0)]) is None                            # too few points
    # a dip that recovers is no saturation
    assert knee([(1, 100.0), (2, 110.0), (4, 400.0), (8, 800.0)]) is None
    pts = [_point(w, bw=v) for w, v in series]
    (hint,) = H.scaling(pts, column_writer)
    assert hint.kind == "knee" and "saturates from 4 workers" in hint.text
    # judged from the knee to the last point, each with its interval
    assert "4 -> 16 workers gave +7% (linear: +300%)" in hint.evidence
    assert "400 [390, 410] B/s at 4 workers, 430 [" in hint.evidence


def test_knee_per_curve_and_falls_named_with_the_swept_axis():
    pts = [_point(w, bw=v, params={"block": 65536}) for w, v in ((1, 1.0), (2, 2.0), (4, 4.0))]
    pts += [_point(w, bw=v, params={"block": 1 << 20}) for w, v in ((1, 5.0), (2, 8.0), (4, 4.0))]
    (hint,) = H.scaling(pts, column_writer)
    assert hint.kind == "falls" and "block=1MiB" in hint.text and "beyond 2 workers" in hint.text
    assert "-50%" in hint.evidence


def test_straggler_slot_and_node_by_robust_z_score():
    recs = [_rec(s, 1.0 + s * 0.001, phase=p) for s in range(4) for p in range(3)]
    recs += [_rec(4, 2.0, phase=p) for p in range(3)]                    # slot 4: twice as slow
    found = H.stragglers([], recs)
    assert [h.text for h in found] == ["slot n1/slot 4 was a straggler in w (workers=5)"]
    assert "2 s against 1 s" in found[0].evidence
    # every slot alike: nothing
    assert H.stragglers([], [_rec(s, 1.0 + s * 0.001) for s in range(5)]) == []
    # a slow node among four
    recs = [_rec(s, 1.0, node=f"n{s % 4}", workers=8) for s in range(8)]
    recs += [_rec(9, 3.0, node="n3", workers=8), _rec(10, 3.0, node="n3", workers=8)]
    recs = [r for r in recs if not (r.node == "n3" and r.elapsed_s == 1.0)]
    nodes = [h for h in H.stragglers([], recs) if h.text.startswith("node")]
    assert len(nodes) == 1 and "node n3" in nodes[0].text


def test_cached_reads_and_data_larger_than_memory():
    warm = _point(1, bw=5e9, metrics={"from_memory": 1.0})
    cold = _point(2, bw=5e8, metrics={"from_memory": 0.02})
    warm.kernel = cold.kernel = "io.read"     # the kernel that declares the flag
    (h,) = H.flags([warm, cold])
    assert "page cache" in h.text and "workers=1, block=64KiB" in h.text and "read 100% of its bytes from memory" in h.evidence
    big = [_rec(s, 1.0, bytes=3 * GiB) for s in range(3)]                 # 9 GiB on n1
    (m,) = H.data_exceeds_memory(big, {"n1": 8 * GiB})
    assert "exceeded the free memory of n1" in m.text and "9.0 GiB" in m.evidence
    assert H.data_exceeds_memory(big, {"n1": 16 * GiB}) == []


def test_system_cpu_from_telemetry():
    def row(phase, user, system):
        return TelemetryRow("r", "n1", T, 0.1, phase, user, system, 0.0, 0, 0, 0.0, 0.0, 0.0,
                            0.0, 0.0)
    rows = [row(0, 10.0, 70.0), row(0, 12.0, 66.0), row(1, 90.0, 5.0), row(None, 0.0, 99.0)]
    (h,) = H.system_cpu({0: "meta", 1: "stream"}, rows)
    assert h.task == "meta" and "system 68% against user 11%" in h.evidence


def test_peak_reached_and_metric_matched_nothing_and_stderr_failure():
    p = _point(4, bw=1e9)
    eff = PointEfficiency(p.point, efficiency=Efficiency("bandwidth_mb_s", 950.0, 1000.0, 0.95,
                                                         3, "mb_s", "[peaks]"))
    (h,) = H.at_peak([p], {p.point: eff})
    assert "peak" in h.text and "of a peak of 1000 MB/s (95%)" in h.evidence
    low = PointEfficiency(p.point, efficiency=Efficiency("bandwidth_mb_s", 500.0, 1000.0, 0.5,
                                                         3, "mb_s", "[peaks]"))
    assert H.at_peak([p], {p.point: low}) == []
    ok = _rec(0, 1.0, task="bwa", kernel="command", metrics={"reads": 5.0})
    missing = H.missing_metrics({"bwa": ["reads", "mapped"]}, [ok])
    assert [h.text for h in missing] == ["metric 'mapped' of bwa matched nothing in any ok "
                                         "record: its column is empty"]
    told = replace(ok, extra={"missing_metrics": ["mapped"]})    # as a record says it missed
    assert len(H.missing_metrics({"bwa": ["reads", "mapped"]}, [told])) == 1   # told once
    bad = _rec(1, 0.1, task="bwa", kernel="command", status="error", error="exit status 2",
               metrics={"exit_status": 2}, extra={"stderr": "loading\n[E::bwa_idx_load] fail\n"})
    (s,) = H.stderr_failures([ok, bad])
    assert "failed and wrote to stderr" in s.text and "[E::bwa_idx_load] fail" in s.evidence
    assert "exit status 2" in s.evidence
    assert H.stderr_failures([ok]) == []


def test_robust_z_is_zero_at_the_median_and_large_for_an_outlier():
    z = H.robust_z([1.0, 1.01, 0.99, 1.0, 5.0])
    assert z[0] == 0.0 and z[4] > 100


def test_cpu_bound_when_most_records_kept_their_cpus_busy():
    held = _point(1, ok=2, records=2, cpu_bound=2, cpu_util=1.0, cpus_allowed="0")
    (h,) = H.cpu_bound([held])
    assert "CPU-BOUND AT ITS PIN" in h.text and "cpu use 1.00" in h.evidence
    assert H.cpu_bound([_point(1, ok=2, records=2, cpu_bound=1, cpu_util=0.6)]) == []


def test_a_point_whose_cpus_others_kept_busy_is_flagged_at_a_shared_pin():
    shared = _point(1, ok=2, records=2, cpu_shared=2, cpus_others=0.45, cpu_util=0.5,
                    cpus_allowed="1")
    (h,) = H.cpu_bound([shared])
    assert "CPU-BOUND AT A SHARED PIN" in h.text and "took 0.45 of its cpus" in h.text
    assert "other load on its node" in h.text and "ITS PIN" not in h.text
    assert "cpu use 0.50" in h.evidence and "others' 0.45" in h.evidence
    assert H.cpu_bound([_point(1, ok=2, records=2, cpu_shared=1, cpus_others=0.4)]) == []
