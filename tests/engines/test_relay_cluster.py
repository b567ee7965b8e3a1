"""Relays on namespace nodes (issue 21, fan-out): with `--fanout 2`, n1 carries each phase to n2
and n3; n3's clock runs FAKETIME_SHIFT_S ahead and is measured by its relay, its offset against
the coordinator composed (n1's plus n3's against n1, bounds added) and still corrected; a
member killed mid-run is lost, the others' results kept and the run goes on."""
from __future__ import annotations

import signal
import statistics
import subprocess
import sys

import pytest

from cluster_lab import FAKETIME_SHIFT_S, DaskLab
from builders import stored_inventories
from conftest import export_json, run_cli
from waits import wait_descendant

pytestmark = pytest.mark.e2e


def test_a_shifted_node_through_a_relay_has_its_clock_corrected(plan_file, tmp_path):
    plan = plan_file("""
        name = "relayed"
        repeat = 5
        [placement]
        workers = [4, 8]
        order = "spread"
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    out = str(tmp_path / "res")
    with DaskLab(4, slots=2, shifted=3) as lab:
        res = run_cli("run", plan, "-o", out, "--scheduler", lab.scheduler, "--fanout", "2",
                      timeout=300)
    assert res.returncode == 0, res.stderr + res.stdout
    inv = stored_inventories(out)
    assert inv["n2"]["channel"] == inv["n3"]["channel"] == "through relay n1"
    assert inv["n1"]["relay_for"] == ["n2", "n3"] and inv["n4"]["channel"] == "direct, TLS"
    rows = export_json(out)
    off = {r["node"]: r["metrics"]["clock_offset_ns"] for r in rows}
    err = {r["node"]: r["metrics"]["clock_error_ns"] for r in rows}
    assert abs(off["n3"] - FAKETIME_SHIFT_S * 1e9) < 0.5e6, off
    assert all(abs(off[n]) < 0.5e6 for n in ("n1", "n2", "n4")), off
    # a member's bound is its relay's plus its own against the relay: more than the relay's
    assert all(e > 0 for e in err.values()) and err["n3"] > err["n1"] and err["n2"] > err["n1"]
    assert min(r["start_ns"] - r["t0_ns"] for r in rows) >= -0.5e6
    by_phase: dict[int, list] = {}
    for r in rows:
        by_phase.setdefault(r["phase"], []).append(r)
    assert all({r["node"] for r in g} == {"n1", "n2", "n3", "n4"} for g in by_phase.values())
    skews = [max(r["start_ns"] for r in g) - min(r["start_ns"] for r in g)
             for g in by_phase.values()]
    assert statistics.median(skews) < FAKETIME_SHIFT_S * 1e9 / 2


def test_a_member_killed_mid_run_is_lost_and_the_run_goes_on(plan_file, tmp_path):
    # phases 0, 1: 3 workers; 2, 3: 2 workers (the worker counts' sweep, repeat 2)
    plan = plan_file("""
        name = "relay-loss"
        repeat = 2
        on_node_loss = "continue"
        [placement]
        workers = [3, 2]
        [[task]]
        name = "nap"
        command = ["sleep", "2"]
    """)
    out = str(tmp_path / "res")
    with DaskLab(3, slots=1) as lab:
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                                 "--scheduler", lab.scheduler, "--fanout", "2"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_descendant(lab.workers["n3"].pid, ["sleep", "2"], proc)   # the first phase
        lab.workers["n3"].send_signal(signal.SIGKILL)     # our own worker, by its pid
        _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    assert "NODE LOST" in err and "node n3 lost" in err, err
    assert stored_inventories(out)["n3"]["channel"] == "through relay n1"
    rows = export_json(out)
    first = [r for r in rows if r["phase"] == 0]
    # the relay's group answered for the others: their results kept
    assert {r["node"]: r["status"] for r in first} == {"n1": "ok", "n2": "ok", "n3": "lost"}
    later = [r for r in rows if r["phase"] > 1]
    assert len(later) == 4 and all(r["status"] == "ok" and r["node"] != "n3"
                                   for r in later), later
