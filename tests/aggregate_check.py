"""The figures a run's stored aggregates give (analysis/agg_points.py) against those a full
read of its records gives (analysis/points.summarize, values.metric_spreads): equal, field by
field. A test module imports this (test_aggregates, figure_views for every example)."""
from __future__ import annotations

import dataclasses
import math

from manybench.analysis import summarize
from manybench.analysis.agg_points import points_of, spreads_of
from manybench.analysis.values import metric_spreads
from manybench.results.store import Store


def _same(a, b, where: str) -> None:
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            if f.name == "lateness_ns":    # per record: the aggregates hold its sketch
                continue
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), (where, list(a), list(b))
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and \
            isinstance(a, (int, float)):
        # sums added in one order or another: equal to the last bits
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300) or a == b, (where, a, b)
    else:
        assert a == b, (where, a, b)


def assert_aggregates_agree(directory: str) -> int:
    """Every run of the directory: its points and metric spreads from the aggregates equal
    those from its records. Returns how many points were compared."""
    n = 0
    with Store(directory, readonly=True) as st:
        for run in st.runs():
            phases = st.phases(run.run_id)
            records = st.records(run.run_id)
            telemetry = st.telemetry(run.run_id)
            full = summarize(records, phases, telemetry)
            aggs = st.aggregates(run.run_id, phases)
            got = points_of(phases, aggs, st.failed_records(run.run_id), telemetry)
            assert [p.point for p in got] == [p.point for p in full]
            for a, b in zip(got, full):
                _same(a, b, f"{run.run_id} {a.point}")
            _same(spreads_of(phases, aggs), metric_spreads(records, phases), "spreads")
            n += len(full)
    return n
