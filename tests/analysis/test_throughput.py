"""Throughput over time (issue 17, item 1): slots' samples are put on one time grid (the
sampling interval from T0) before they are summed. Known answers on constructed samples
shaped as the sampler takes them (first at T0 + interval, microseconds apart between slots,
an exact last one at each slot's end), and a real 4-worker io.write run whose aggregate
series is its slots' own rates summed, no point above the sum of their own peaks."""
from __future__ import annotations

import json
import os

import pytest

from conftest import run_cli
from manybench.analysis.throughput import aggregate, grid, infer_interval, planned_interval
from manybench.results.contract import Sample
from manybench.results.store import Store

GB = 1e9


def _slot(rank: int, rate: float, end: float, dt: float = 0.1, skew: float = 0.0,
          node: str = "n1") -> list[Sample]:
    """A slot moving `rate` bytes/s from T0 to `end`, sampled at k x dt + skew (+ a few us of
    wake-up per rank) as node/sampler.py does, the last sample exact at its end."""
    out, k = [], 1
    while k * dt + skew < end:
        t = k * dt + skew + 3e-6 * rank
        out.append(Sample("r", 0, rank, node, t, rate * t, "bytes"))
        k += 1
    out.append(Sample("r", 0, rank, node, end, rate * end, "bytes"))
    return out


def test_slots_sampled_microseconds_apart_sum_to_their_rates():
    # four slots at 2 GB/s each for 1 s: 8 GB/s at every point, never TiB/s spikes or 0
    samples = [s for r in range(4) for s in _slot(r, 2 * GB, 1.0 + 1e-5 * r)]
    t, rate = aggregate(samples, 0.1)
    assert len(t) == 10
    assert all(abs(x - 8 * GB) < 0.01 * 8 * GB for x in rate), rate
    # the interval, inferred from the samples when not given, is the sampler's
    assert infer_interval(samples) == pytest.approx(0.1, abs=1e-4)
    t2, rate2 = aggregate(samples)
    assert list(rate2) == pytest.approx(list(rate))


def test_a_slot_that_ends_early_leaves_the_others_rate():
    # slot 0 at 1 GB/s for 1 s, slot 1 at 3 GB/s for 0.5 s: 4 GB/s, then 1 GB/s
    samples = _slot(0, GB, 1.0) + _slot(1, 3 * GB, 0.5)
    t, rate = aggregate(samples, 0.1)
    got = dict(zip((round(x, 2) for x in t), rate))
    assert got[0.05] == pytest.approx(4 * GB, rel=0.01)
    assert got[0.45] == pytest.approx(4 * GB, rel=0.01)
    assert got[0.55] == pytest.approx(GB, rel=0.01) and got[0.95] == pytest.approx(GB, rel=0.01)
    # the bytes are all there: rate x width summed = every slot's total
    edges = grid(1.0, 0.1)
    assert sum(r * w for r, w in zip(rate, edges[1:] - edges[:-1])) == pytest.approx(2.5 * GB)


def test_a_late_start_and_a_short_last_bin():
    # a slot that started 20 ms after T0: 0 before, its rate after (given its start)
    samples = [Sample("r", 0, 0, "n1", 0.1, 0.08 * GB, "bytes"),
               Sample("r", 0, 0, "n1", 0.2, 0.18 * GB, "bytes"),
               Sample("r", 0, 0, "n1", 0.2004, 0.1804 * GB, "bytes")]
    t, rate = aggregate(samples, 0.1, {("n1", 0): 0.02})
    # 0.2004 s: the 0.4 ms tail joins the last bin instead of being one of its own
    assert len(t) == 2
    assert rate[0] == pytest.approx(0.8 * GB) and rate[1] == pytest.approx(GB, rel=0.01)
    assert list(grid(0.24, 0.1)) == pytest.approx([0, 0.1, 0.24])
    assert list(grid(0.36, 0.1)) == pytest.approx([0, 0.1, 0.2, 0.3, 0.36])


def test_planned_interval_follows_the_plan():
    raw = {"sample": "50ms", "task": [{"name": "a"}, {"name": "b", "sample": 0.2}]}
    assert planned_interval(raw, "a") == 0.05 and planned_interval(raw, "b") == 0.2
    assert planned_interval({"task": [{"name": "a"}]}, "a") == 0.1      # the default
    assert planned_interval(raw, "zzz") is None


PLAN = """
name = "tput"
sample = "50ms"
[placement]
workers = 4
pin = "none"            # 4 slots on 2 cpus: the scheduler shares them out evenly
[[task]]
name = "w"
kernel = "io.write"
dir = "{dir}"
size = "128MiB"
block = "1MiB"
fsync = "never"
"""


def _memory_dir(tmp_path) -> str:
    """tmpfs when there is one (writes at memory's steady rate, no write-back throttling
    that makes a real rate swing), else the test's own directory."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return str(scratch)


def _run_once(tmp_path, attempt: int) -> tuple[dict, float, str]:
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace("{dir}", _memory_dir(tmp_path)))
    out = tmp_path / f"res{attempt}"
    res = run_cli("run", str(plan), "-o", str(out))
    assert res.returncode == 0, res.stderr
    summary = json.loads(run_cli("report", str(out), "--json").stdout)
    (point,) = summary["runs"][0]["tasks"][0]["points"]
    bw = next(v for v in point["figures"] if v["figure"] == "bandwidth"
              and v["scope"] == "aggregate")
    (series,) = point["throughput"]
    return series, bw["median"], str(out)


def _slots_own_peaks(out: str) -> float:
    """The sum over slots of each slot's own fastest rate between two of its samples (its
    start, from its record, as its first point at 0 bytes): an upper bound of any sum of
    their rates at one instant, however uneven the machine made them."""
    with Store(out, readonly=True) as st:
        run = st.runs()[0].run_id
        starts = {(r.node, r.extra["rank"]): (r.start_ns - r.t0_ns) / 1e9
                  for r in st.records(run)}
        by_slot: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for smp in st.samples(run):
            by_slot.setdefault((smp.node, smp.rank), []).append((smp.t_s, smp.done))
    peaks = 0.0
    for key, pts in by_slot.items():
        pts = [(min(starts[key], pts[0][0]), 0.0)] + sorted(pts)
        peaks += max((d1 - d0) / (t1 - t0) for (t0, d0), (t1, d1) in zip(pts, pts[1:])
                     if t1 > t0)
    return peaks


@pytest.mark.e2e
def test_real_four_worker_write_is_its_slots_own_rates_summed(tmp_path):
    """A real run: no point of the aggregate series exceeds the sum of the slots' own
    fastest rates (summing samples microseconds apart and dividing by those microseconds
    gave points 1000x above it in every run), and the series holds every byte written.
    Points above the phase's average (sum(bytes) / window) are real here: writes into
    memory burst, and slots a busy machine starts late or slows stretch the window
    (docs/definitions.md); the report draws the average as a dashed line beside them."""
    series, bw, out = _run_once(tmp_path, 0)
    assert bw > 0
    assert max(series["rate"]) <= 1.001 * _slots_own_peaks(out)
    assert series["unit"] == "B/s" and series["interval_s"] == 0.05
    # and the series holds every byte written: rate x bin width summed = 4 x 128 MiB
    t = series["t_s"]
    edges = [0.0]
    for mid in t:
        edges.append(2 * mid - edges[-1])
    moved = sum(r * (b - a) for r, a, b in zip(series["rate"], edges, edges[1:]))
    assert moved == pytest.approx(4 * 128 * 2**20, rel=1e-6)
    with Store(out, readonly=True) as st:
        assert {s.rank for s in st.samples(st.runs()[0].run_id)} == {0, 1, 2, 3}
