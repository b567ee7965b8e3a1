"""Warnings are data: stored with the run as they happen, shown by `report`, told once."""
from __future__ import annotations

import os

import pytest

from conftest import run_cli
from manybench.inventory.topology import topology
from manybench.results.store import Store

pytestmark = pytest.mark.e2e



# what the machine's load may add to any run (run/quality.py's checks of the figures, the
# noise floor, stalls the lead left to it, a slot that slept because its cpu was busy)
MACHINE_KINDS = ("unstable", "short", "not-quiet", "noise-floor", "late-go", "busy-cpu")


def _run(plan_file, tmp_path, text: str):
    out = str(tmp_path / "res")
    res = run_cli("run", plan_file(text), "-o", out, "-q")
    with Store(out, readonly=True) as st:
        run = st.runs()[-1]
        return res, st.warnings(run.run_id), st.nodes(run.run_id), out


def test_placement_and_metric_warnings_are_stored_shown_and_told_once(plan_file, tmp_path):
    cpus = len(topology())
    many = cpus * 2
    res, warnings, nodes, out = _run(plan_file, tmp_path, f"""
        repeat = 3
        [placement]
        workers = {many}
        [[task]]
        name = "sync"
        kernel = "null"
        [[task]]
        name = "talk"
        command = ["echo", "rate 5"]
        metrics.rate = 'rate (?P<value>\\d+)'
        metrics.size = 'size (?P<value>\\d+)'
    """)
    assert res.returncode == 0, res.stderr
    # run/quality.py's checks of the figures (tests/analysis/test_quality.py) may add theirs, after
    warnings = [w for w in warnings if w.kind not in MACHINE_KINDS]
    kinds = [(w.kind, w.node, w.task) for w in warnings]
    host = nodes[0].name
    assert kinds == [("oversubscribed", host, ""), ("pin", host, ""),
                     ("missing-metric", "", "talk")], kinds
    pin = warnings[1].message
    assert f"{many} slots on node {host}'s {cpus} cpus share cpus" in pin
    missing = warnings[2]
    assert "'size'" in missing.message and missing.phase == 3   # the first phase of "talk"
    # told once on stderr however many phases repeat it, and shown by the report
    assert res.stderr.count("metric 'size' matched nothing") == 1
    report = run_cli("report", out)
    assert report.returncode == 0
    for w in warnings:
        assert w.message in report.stdout.replace("\n", " ") or w.message[:40] in report.stdout


def test_pin_numa_warns_only_where_there_is_one_numa_node(plan_file, tmp_path):
    res, warnings, _, _ = _run(plan_file, tmp_path, """
        noise = 0     # this machine's stalls (a `stalls` warning) are not this test's
        [placement]
        pin = "numa"
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    assert res.returncode == 0, res.stderr
    if len({c.numa for c in topology()}) == 1:
        assert [w.kind for w in warnings if w.kind not in MACHINE_KINDS] == ["pin"]
        assert "one NUMA node" in warnings[0].message
    else:    # several NUMA nodes: pin = numa pins for real
        assert warnings == []


def test_a_quiet_run_has_no_warnings_and_stores_its_node(plan_file, tmp_path):
    res, warnings, nodes, _ = _run(plan_file, tmp_path, """
        noise = 0     # this machine's stalls (a `stalls` warning) are not this test's
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    assert res.returncode == 0 and warnings == [] and "warning" not in res.stderr
    [node] = nodes
    # the node's inventory is the one `manybench info` shows, collected on the node
    assert node.inventory["hostname"] == os.uname().nodename
    assert node.inventory["logical_cpus"] == os.cpu_count() and node.cpus == len(topology())
    assert node.inventory["peaks"]["values"] is not None and node.slots == 1
