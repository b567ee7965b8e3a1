"""Samples and telemetry from nodes reached over Dask, one of them with its clock shifted:
both travel back with the phase's results and land on the coordinator's timebase."""
from __future__ import annotations

import pytest

from cluster_lab import DaskLab
from conftest import run_cli
from manybench.results.store import Store

pytestmark = pytest.mark.e2e

INTERVAL = 0.1


@pytest.fixture(scope="module")
def two_nodes():
    with DaskLab(2, slots=1, shifted=2) as lab:      # n2's clock runs 4 ms ahead
        yield lab


def test_samples_and_telemetry_cross_nodes_on_the_coordinators_clock(two_nodes, plan_file,
                                                                      tmp_path):
    plan = plan_file(f"""
        name = "observe"
        sample = {INTERVAL}
        telemetry = "0.2s"
        [placement]
        workers = 2
        order = "spread"
        [[task]]
        name = "w"
        kernel = "io.write"
        dir = "{{tmp}}"
        duration = "1s"
        size = "1GiB"
        block = "64KiB"
        fsync = "never"
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "--scheduler", two_nodes.scheduler, timeout=300)
    assert res.returncode == 0, res.stderr + res.stdout
    with Store(out, readonly=True) as st:
        run = st.runs()[0].run_id
        [phase] = st.phases(run)
        samples = st.samples(run, phase.index)
        assert {s.node for s in samples} == {"n1", "n2"}
        # every sample inside its slot's window on the coordinator's timebase, the last at its
        # end (the conversion itself: test_samples.py, exactly)
        recs = {(r.node, r.extra["rank"]): r for r in st.records(run)}
        for s in samples:
            r = recs[(s.node, s.rank)]
            assert 0 < s.t_s <= (r.end_ns - r.t0_ns) / 1e9 + 1e-6
        rows = [t for t in st.telemetry(run) if t.phase_id == phase.index]
        assert {t.node for t in rows} == {"n1", "n2"}
        assert all(t.t_ns > phase.t0_ns for t in rows)
