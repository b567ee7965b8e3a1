"""Per-phase aggregates (results schema 9, analysis/aggregates.py): the figures they give equal
those a full read of the records gives, on runs of the test suite's plans and on an older
file aggregated on first read; and a sketch's percentiles hold its stated accuracy for a point
of many records."""
from __future__ import annotations

import math
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from aggregate_check import assert_aggregates_agree
from conftest import run_cli
from suite_paths import FIXTURES
from manybench.analysis.sketch import EXACT_MAX, RELATIVE, Sketch, merged
from manybench.analysis.stats import nearest_rank
from manybench.results.schema import SCHEMA_VERSION
from manybench.results.store import Store

RESULTS = FIXTURES / "results"

MIXED = """
repeat = 2
[placement]
workers = [1, 2]
[[task]]
name = "w"
kernel = "io.write"
dir = "{tmp}"
size = "4MiB"
block = "64KiB"
warmup = 1
[[task]]
name = "m"
kernel = "meta.create"
dir = "{tmp}"
total = 200
[[task]]
name = "alone"
kernel = "null"
[[task]]
name = "echo"
command = ["/bin/sh", "-c", "echo rate {size} MB/s; echo ver 1.{slot}; exit $(( {slot} % 2 ))"]
size = [10, 20]
metrics.rate = 'rate (?P<value>[\\d.]+) (?P<unit>[MG]B/s)'
[[concurrent]]
name = "mixed"
tasks = ["w", "m"]
"""


@pytest.mark.e2e
def test_aggregates_give_the_figures_the_records_give(plan_file, tmp_path):
    plan = plan_file(MIXED.replace("{tmp}", str(tmp_path)))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode in (0, 1), res.stderr      # the odd slots' command fails
    assert assert_aggregates_agree(out) >= 8
    with Store(out, readonly=True) as st:
        (run,) = st.runs()
        points = {len(st.failed_records(run.run_id))}
    assert points != {0}        # failed records were compared too


def _old_copy(tmp_path: Path, name: str) -> str:
    d = tmp_path / name.split(".")[0]
    d.mkdir()
    shutil.copy(RESULTS / name, d / "results.db")
    return str(d)


def test_an_older_file_is_aggregated_on_first_read_and_agrees(tmp_path):
    d = _old_copy(tmp_path, "v7.db")
    assert assert_aggregates_agree(d) > 0          # read-only: aggregated in memory
    db = sqlite3.connect(str(Path(d) / "results.db"))
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7   # the file left as it was
    db.close()
    Store(d).close()                               # opened to write: migrated in place
    db = sqlite3.connect(str(Path(d) / "results.db"))
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    phases = db.execute("SELECT COUNT(*) FROM phases").fetchone()[0]
    assert db.execute("SELECT COUNT(*) FROM aggregates").fetchone()[0] == phases > 0
    db.close()
    assert assert_aggregates_agree(d) > 0


@pytest.mark.e2e
def test_a_report_of_an_older_file_reads_as_before(tmp_path):
    d = _old_copy(tmp_path, "v1.db")
    res = run_cli("report", d)
    assert res.returncode == 0, res.stderr
    assert assert_aggregates_agree(d) > 0


def _within(got: float, want: float) -> bool:
    return abs(got - want) <= RELATIVE * abs(want) + 1e-300


def test_a_sketch_holds_its_accuracy_for_a_point_of_many_records():
    rng = random.Random(30)
    # a point of 16 phases x 64,000 records: latenesses from ns to s, a few negative
    phases = [[rng.lognormvariate(11, 2) * (-1 if rng.random() < 0.01 else 1)
               for _ in range(4_000)] for _ in range(16)]
    whole = merged(Sketch.of(p) for p in phases)
    values = sorted(v for p in phases for v in p)
    assert not whole.exact and whole.n == len(values)
    assert whole.lo == values[0] and whole.hi == values[-1]       # exact always
    for q in (0.1, 1, 10, 25, 50, 75, 90, 99, 99.9):
        assert _within(whole.quantile(q), nearest_rank(values, q)), q
    d = whole.dist()
    mean = sum(values) / len(values)
    assert d.ci_low < mean < d.ci_high
    assert math.isclose(whole.sum, math.fsum(values), rel_tol=1e-9)
    # stored and read back: the same answers
    back = Sketch.from_json(whole.to_json())
    assert back.quantile(50) == whole.quantile(50) and back.n == whole.n


def test_a_sketch_is_exact_while_few():
    xs = list(range(EXACT_MAX, 0, -1))
    s = merged([Sketch.of(xs[:10]), Sketch.of(xs[10:])])
    assert s.exact and s.quantile(50) == nearest_rank(xs, 50) and s.spread().n == EXACT_MAX
    assert not merged([s, Sketch.of([1])]).exact


def test_a_point_of_many_records_reads_within_the_stated_accuracy(tmp_path):
    """4 phases x 3,000 records: the figures over records (lateness, per-slot time, own
    bandwidth, a metric) from the stored aggregates are within RELATIVE of the full read's,
    n, min and max exactly; the figures over phases exactly."""
    from builders import T0, phase, plan
    from manybench.analysis import summarize
    from manybench.analysis.agg_points import points_of, spreads_of
    from manybench.analysis.values import metric_spreads
    from manybench.record import Record
    rng = random.Random(7)
    with Store(tmp_path) as st:
        st.begin_run("w", plan(), [], {})
        for i in range(4):
            recs = []
            for n in range(30):
                for s in range(100):
                    start = T0 + int(rng.lognormvariate(9, 1.5))
                    secs = rng.lognormvariate(0, 0.3)
                    recs.append(Record(run="w", phase=i, task="w", kernel="io.write",
                                       variant="", rep=i, workers=3000, node=f"n{n:02d}",
                                       slot=s, cpu=s, t0_ns=T0, start_ns=start,
                                       end_ns=start + int(secs * 1e9), elapsed_s=secs,
                                       ops=16, bytes=1 << 20, params={"size": 1048576},
                                       metrics={"mb_s": rng.uniform(100, 900)}))
            st.write_phase("w", phase(i, 3000), T0, recs)
        phases, records = st.phases("w"), st.records("w")
        (full,) = summarize(records, phases)
        (got,) = points_of(phases, st.aggregates("w", phases))
        spread = spreads_of(phases, st.aggregates("w", phases))[full.point]["mb_s"]
    want = metric_spreads(records, phases)[full.point]["mb_s"]
    for a, b in ((got.lateness.median, full.lateness.median),
                 (got.lateness.p99, full.lateness.p99),
                 (got.slot_elapsed.median, full.slot_elapsed.median),
                 (got.own_bandwidth.median, full.own_bandwidth.median),
                 (got.metrics["mb_s"], full.metrics["mb_s"]), (spread.median, want.median)):
        assert _within(a, b), (a, b)
    assert full.lateness.n == 12_000
    assert (got.lateness.n, got.lateness.max, got.lateness.min) == \
        (full.lateness.n, full.lateness.max, full.lateness.min)
    assert (spread.min, spread.max, spread.n) == (want.min, want.max, want.n)
    assert got.bandwidth == full.bandwidth and got.skew == full.skew     # over phases: exact
    assert got.metric_stats == full.metric_stats
