"""Statistics over repetitions (n, median, mean, stddev, 95% CI, CV) and warm-up repetitions
left out of every figure (issue 10, item 2)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from manybench.analysis import summarize
from manybench.analysis.stats import Stats
from manybench.plan import parse_plan
from manybench.plan.expand import expand
from builders import S, T, pinfo, rec


def test_stats_known_answers():
    s = Stats.of([10, 12, 14])
    assert (s.n, s.min, s.median, s.max, s.mean) == (3, 10, 12, 14, 12)
    assert s.stddev == pytest.approx(2.0)
    # t(0.975, 2) = 4.302653: half-width 4.302653 * 2 / sqrt(3)
    half = 4.302653 * 2 / math.sqrt(3)
    assert s.ci_low == pytest.approx(12 - half, rel=1e-6)
    assert s.ci_high == pytest.approx(12 + half, rel=1e-6)
    assert s.cv == pytest.approx(2 / 12) and s.unstable
    one = Stats.of([5.0])
    assert (one.n, one.mean, one.stddev, one.ci_low, one.cv) == (1, 5.0, None, None, None)
    assert not one.unstable and Stats.of([]) is None
    steady = Stats.of([100, 101, 99, 100])
    assert steady.cv < 0.1 and not steady.unstable


def _io(i: int, t0: int, seconds: float, rep: int, metric: float) -> list:
    p = {"size": 1 << 20}
    return [dataclasses.replace(
        rec(i, slot, t0, t0, t0 + int(seconds * S), kernel="io.write", workers=2, params=p,
            ops=1, bytes=1 << 20, elapsed_s=seconds, metrics={"mb_s": metric + slot}), rep=rep)
        for slot in (0, 1)]


def test_warmup_phases_are_left_out_of_every_figure():
    p = {"size": 1 << 20}
    t = [T + k * 10 * S for k in range(4)]
    records = (_io(0, t[0], 0.01, -1, 1000.0)      # warm-up: 100x faster, must not count
               + _io(1, t[1], 1.0, 0, 10.0) + _io(2, t[2], 2.0, 1, 20.0)
               + _io(3, t[3], 1.0, 2, 30.0))
    phases = [dataclasses.replace(pinfo(i, "w", kernel="io.write", workers=2, params=p,
                                        t0=t[i]), rep=i - 1, warmup=i == 0) for i in range(4)]
    [s] = summarize(records, phases)
    assert s.warmup == 1 and s.phases == 3 and s.records == 6
    mib = 1 << 20
    assert s.bandwidth.n == 3 and s.bandwidth.max == 2 * mib     # 2 MiB over 1 s at most
    assert s.bandwidth.mean == pytest.approx((2 * mib + mib + 2 * mib) / 3)
    assert s.bandwidth.stddev > 0 and s.bandwidth.ci_low < s.bandwidth.mean
    # a metric over repetitions: per phase the median of its slots (lower middle: slot 0)
    m = s.metric_stats["mb_s"]
    assert (m.n, m.min, m.median, m.max, m.mean) == (3, 10.0, 20.0, 30.0, 20.0)
    assert m.cv == pytest.approx(10 / 20)
    # without the phases table the records' negative rep marks the warm-up
    [s2] = summarize(records)
    assert s2.warmup == 1 and s2.bandwidth.n == 3


def test_warmup_expands_to_negative_reps_before_the_measured_ones():
    plan = parse_plan('warmup = 2\nrepeat = 2\n[[task]]\nname = "a"\nkernel = "null"\n'
                      '[[task]]\nname = "b"\nkernel = "null"\nwarmup = 0\n')
    got = [(p.task.name, p.rep, p.warmup) for p in expand(plan)]
    assert got == [("a", -2, True), ("a", -1, True), ("a", 0, False), ("a", 1, False),
                   ("b", 0, False), ("b", 1, False)]
