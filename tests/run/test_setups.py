"""Variants' setup and teardown on the nodes: run around their phases, output and node state
stored, and a failing setup stopping only its own variant."""
from __future__ import annotations

import pytest

from conftest import export_json, run_cli
from manybench.results.store import Store

pytestmark = pytest.mark.e2e


def test_setup_runs_before_its_variant_and_teardown_after_and_a_failure_stops_only_its_own(
        plan_file, tmp_path):
    plan = plan_file("""
        repeat = 2
        [[task]]
        name = "n"
        command = ["sh", "-c", "cat {tmp}/state-{node} 2>/dev/null || echo none"]
        metrics.state = '(?P<value>\\w+)'
        [[variant]]
        name = "up"
        vars = { word = "tuned" }
        setup = [["sh", "-c", "echo {word} > {tmp}/state-{node}"], ["echo", "set up {variant}"]]
        teardown = [["rm", "{tmp}/state-{node}"]]
        [[variant]]
        name = "broken"
        setup = [["sh", "-c", "echo cannot mount >&2; exit 3"], ["echo", "never"]]
        [[variant]]
        name = "plain"
        """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 1, res.stderr               # the broken variant's phases failed
    assert "SETUP FAILED" in res.stderr and "Traceback" not in res.stderr
    rows = export_json(out)
    by = {v: [r for r in rows if r["variant"] == v] for v in ("up", "broken", "plain")}
    assert [r["metrics"]["state"] for r in by["up"]] == ["tuned", "tuned"]   # set up first
    assert [r["metrics"]["state"] for r in by["plain"]] == ["none", "none"]  # torn down after
    assert len(by["broken"]) == 2 and all(r["status"] == "error" for r in by["broken"])
    assert "variant broken: setup failed on node" in by["broken"][0]["error"]
    assert "`sh -c echo cannot mount >&2; exit 3` exit status 3: cannot mount" in \
        by["broken"][0]["error"]
    assert not list(tmp_path.glob("state-*"))               # the teardown ran
    with Store(out, readonly=True) as st:
        run = st.runs()[-1].run_id
        cmds = st.node_commands(run)
        labels = [s.label for s in st.snapshots(run)]
    up = [c for c in cmds if c.variant == "up"]
    assert [(c.step, c.argv[0], c.exit_status) for c in up] == [
        ("setup", "sh", 0), ("setup", "echo", 0), ("teardown", "rm", 0)]
    assert any("set up up" in c.stdout for c in up)
    broken = [c for c in cmds if c.variant == "broken"]
    assert [(c.argv[0], c.exit_status) for c in broken] == [("sh", 3)]  # stopped at the failure
    assert "cannot mount" in broken[0].stderr
    assert labels[0] == "start" and "before setup up" in labels and "after teardown up" in labels
    assert "after setup broken" in labels
    report = run_cli("report", out).stdout
    assert "setup failed" in report
