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


# -- the run's end: the checks on a run as stored, a phase at a time -------------------------
def _stored_run(tmp_path):
    """A run of: a noisy io.write point (unstable) after a warm-up phase, a point of short
    phases, a command whose metric came in two units; telemetry busier than its slots."""
    from manybench.model import Phase, Plan, TaskSpec
    from manybench.results.store import Store
    io = TaskSpec("w", "io.write", {})
    cmd = TaskSpec("c", "command", {}, command=["true"])
    st = Store(tmp_path)
    st.begin_run("r", Plan(name="q", tasks=[io, cmd], raw={}), [], {"hostname": "n"}, {})
    phases = [(io, -1, [1.0, 1.0]), (io, 0, [1.0, 1.0]), (io, 1, [1.6, 1.5]), (io, 2, [1.0, 1.1]),
              (io, 0, [40e-6, 45e-6]), (io, 1, [40e-6, 41e-6]), (cmd, 0, [1.0]), (cmd, 1, [1.0])]
    for i, (spec, rep, durations) in enumerate(phases):
        t0 = T + i * 10 * S
        short = durations[0] < 1e-3
        point = f"{spec.name}-{'short' if short else 'long'}"
        params = {"size": 1 << (10 if short else 20)}
        recs = []
        for slot, d in enumerate(durations):
            st_ns = t0 + slot * 20_000
            metrics = {"cpus_allowed": str(slot)}
            if spec is cmd:
                metrics.update({"rate": 5.0, "rate.unit": "GB/s" if i % 2 else "MB/s"})
            r = rec(i, slot, t0, st_ns, st_ns + int(d * S), task=spec.name, kernel=spec.kernel,
                    workers=len(durations), params=params, ops=1, bytes=params["size"],
                    elapsed_s=d, metrics=metrics)
            r.run, r.rep = "r", rep
            recs.append(r)
        st.write_phase("r", Phase(i, spec, spec.kernel, "", rep, len(durations), "spread",
                                  "core", params, point), t0, list(reversed(recs)))
        st.write_telemetry("r", [busy_row("n", i, 95.0)])
    return st


def _all_at_once(st, cpus):
    """The checks as the run's end made them before: every record read at once."""
    from manybench.results.contract import START
    records, telemetry = st.records("r"), st.telemetry("r")
    points = summarize(records, st.phases("r"), telemetry)
    start = {s.node: s.data for s in st.snapshots("r", label=START)}
    return (quality.unstable(points) + quality.short(points, quality.clock_resolution_ns())
            + quality.machine(start) + quality.other_load(telemetry, records, cpus)
            + quality.units(records))


def test_the_runs_end_checks_find_from_the_aggregates_what_a_full_read_finds(tmp_path,
                                                                             monkeypatch):
    """Issue 30: the run's end reads its phases' stored aggregates, not one record."""
    from manybench.results.store import Store
    st, cpus = _stored_run(tmp_path), {"n": 4}
    expected = _all_at_once(st, cpus)
    assert {k for k, *_ in expected} == {"unstable", "short", "not-quiet", "units"}, expected

    def no_record(*_a, **_k):
        raise AssertionError("the run's end read records")
    for name in ("records", "phase_records", "phase_records_of", "failed_records",
                 "said_missing", "ok_slot_times"):
        monkeypatch.setattr(Store, name, no_record)
    assert quality.run_checks(st, "r", cpus) == expected


def test_phase_records_give_each_phase_whole_and_a_scattered_one_is_refused(tmp_path,
                                                                             monkeypatch):
    from manybench.results import record_read
    monkeypatch.setattr(record_read, "CHUNK_ROWS", 3)
    st = _stored_run(tmp_path)
    whole = st.records("r")
    got = list(st.phase_records("r"))
    assert [i for i, _ in got] == list(range(8))
    assert [r for _, rs in got for r in rs] == whole       # node, slot order within a phase
    # a phase stored again comes last, still whole
    st.write_phase("r", *_phase_of(st, 2), [r for r in whole if r.phase == 2])
    again = list(st.phase_records("r"))
    assert [i for i, _ in again] == [0, 1, 3, 4, 5, 6, 7, 2]
    assert again[-1][1] == [r for r in whole if r.phase == 2]
    # rows of a phase apart (no writer does that): refused, and the checks read all at once
    st._db.execute("INSERT INTO records SELECT * FROM records WHERE phase = 0 AND slot = 1")
    st._db.execute("DELETE FROM records WHERE rowid = (SELECT MIN(rowid) FROM records "
                   "WHERE phase = 0 AND slot = 1)")
    st._db.commit()
    import pytest
    with pytest.raises(record_read.Scattered):
        list(st.phase_records("r"))
    assert quality.run_checks(st, "r", {"n": 4}) == _all_at_once(st, {"n": 4})


def _phase_of(st, index):
    from manybench.model import Phase, TaskSpec
    p = next(p for p in st.phases("r") if p.index == index)
    spec = TaskSpec(p.task, p.kernel, {})
    return Phase(p.index, spec, p.kernel, "", p.rep, p.workers, "spread", "core", p.params,
                 p.point), p.t0_ns
