"""pyperf-style warnings on a run's figures (run/quality.py): high CV, phases too short for
the clock or the skew, a machine that was not quiet."""
from __future__ import annotations

from manybench.analysis import summarize
from manybench.results.contract import WARNING_KINDS
from manybench.run import quality
from builders import S, T, busy_row, pinfo, rec


def _io_point(durations_s: list[float], start_skew_ns: int = 0, workers: int = 2):
    p = {"size": 1 << 20}
    records, phases = [], []
    for i, d in enumerate(durations_s):
        t0 = T + i * 10 * S
        for slot in range(workers):
            st = t0 + slot * start_skew_ns
            records.append(rec(i, slot, t0, st, st + int(d * S), kernel="io.write",
                               workers=workers, params=p, ops=1, bytes=1 << 20, elapsed_s=d,
                               metrics={"cpus_allowed": str(slot)}))
        phases.append(pinfo(i, "w", kernel="io.write", workers=workers, params=p, t0=t0))
    return records, phases


def test_kinds_are_declared():
    assert {"unstable", "short", "not-quiet"} <= set(WARNING_KINDS)


def test_high_cv_warns_and_a_steady_point_does_not():
    noisy = summarize(*_io_point([1.0, 1.5, 1.0]))
    steady = summarize(*_io_point([1.0, 1.01, 0.99]))
    [(kind, node, task, msg)] = quality.unstable(noisy)
    assert (kind, task) == ("unstable", "t") and "aggregate bandwidth" in msg and "CV" in msg
    assert quality.unstable(steady) == []


def test_short_phases_against_resolution_and_skew():
    # 50 us phases whose slots started 20 us apart: under 10x the skew
    pts = summarize(*_io_point([50e-6] * 3, start_skew_ns=20_000))
    [(kind, _, _, msg)] = quality.short(pts, resolution_ns=1.0)
    assert kind == "short" and "skew" in msg and "resolution" not in msg
    # a coarse clock (1 ms resolution) makes a 0.5 s phase too short to time
    long = summarize(*_io_point([0.5] * 3))
    assert quality.short(long, resolution_ns=1.0) == []
    [(_, _, _, msg)] = quality.short(long, resolution_ns=1e6)
    assert "resolution" in msg


def test_governor_and_turbo_from_the_start_snapshot():
    snaps = {"a": {"tunables": {"cpufreq": {"governor": "powersave", "boost": "1"}}},
             "b": {"tunables": {"cpufreq": {"governor": "performance",
                                            "intel_no_turbo": "1"}}}}
    got = quality.machine(snaps)
    assert [(k, n) for k, n, _, _ in got] == [("not-quiet", "a"), ("not-quiet", "a")]
    assert "powersave" in got[0][3] and "turbo" in got[1][3]


def test_other_load_seen_by_telemetry():
    records, _ = _io_point([1.0, 1.0], workers=2)   # 2 slots with one cpu each, on node "n"
    cpus = {"n": 4}                                   # their share: 50% of the node
    quiet = [busy_row("n", 0, 55.0), busy_row("n", 1, 50.0), busy_row("n", None, 100.0)]
    busy = [busy_row("n", 0, 95.0), busy_row("n", 1, 90.0)]
    assert quality.other_load(quiet, records, cpus) == []
    [(kind, node, _, msg)] = quality.other_load(busy, records, cpus)
    assert (kind, node) == ("not-quiet", "n") and "other load" in msg
