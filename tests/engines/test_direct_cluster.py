"""Namespace nodes reached over their agents' direct channels (issue 21): every node goes
direct, and a node whose channel drops mid-phase (its worker and agent alive: only the TCP
connection is cut) is lost; the run goes on without it (continue) or stops (abort)."""
from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time

import psutil
import pytest

from cluster_lab import DaskLab
from conftest import export_json
from waits import wait_descendant

pytestmark = pytest.mark.e2e


def _run_agent(worker: subprocess.Popen) -> psutil.Process | None:
    """The worker's agent process that holds the run (its slots are its children)."""
    for c in psutil.Process(worker.pid).children():
        try:
            if "manybench.node.server" in " ".join(c.cmdline()) and c.children():
                return c
        except psutil.Error:
            pass
    return None


def _cut_channel(lab: DaskLab, i: int, worker: subprocess.Popen) -> str:
    """Destroy the agent's established TCP connection to the coordinator in node i's
    namespace (ss -K: the kernel resets it); the port it was on."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        agent = _run_agent(worker)
        if agent is not None:
            out = lab.lab.run(i, ["ss", "-tnpH", "state", "established"]).stdout
            ports = [m.group(1) for line in out.splitlines() if f"pid={agent.pid}," in line
                     for m in [re.search(r"^\S+\s+\S+\s+\S+:(\d+)\s", line)] if m]
            if ports:
                killed = lab.lab.run(i, ["ss", "-K", "state", "established",
                                         f"( sport = :{ports[0]} )"])
                assert killed.returncode == 0, killed.stderr
                return ports[0]
        time.sleep(0.1)
    raise AssertionError("the agent's direct channel was not found")


@pytest.mark.parametrize("policy", ["continue", "abort"])
def test_a_node_whose_direct_channel_drops_is_lost(policy, plan_file, tmp_path):
    # phases 0, 1: 3 workers; 2, 3: 2 workers (the worker counts' sweep, repeat 2)
    plan = plan_file(f"""
        name = "cut"
        repeat = 2
        on_node_loss = "{policy}"
        [placement]
        workers = [3, 2]
        [[task]]
        name = "nap"
        command = ["sleep", "2"]
    """)
    out = str(tmp_path / "res")
    with DaskLab(3, slots=1) as lab:
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                                 "--scheduler", lab.scheduler], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # the first phase under way on n2 (its task started), not a time after the run began:
        # the run measures each node's noise floor first, longer on a busy machine
        wait_descendant(lab.workers["n2"].pid, ["sleep", "2"], proc)
        _cut_channel(lab, 2, lab.workers["n2"])
        _, err = proc.communicate(timeout=180)
        assert lab.workers["n2"].poll() is None       # the node itself never went away
    assert proc.returncode == 1, err
    assert "NODE LOST" in err and "node n2 lost: its direct channel" in err, err
    rows = export_json(out)
    first = [r for r in rows if r["phase"] == 0]
    assert {r["node"]: r["status"] for r in first} == {"n1": "ok", "n2": "lost", "n3": "ok"}
    db = sqlite3.connect(os.path.join(out, "results.db"))
    status = db.execute("select status from runs").fetchone()[0]
    channels = dict(db.execute("select name, json_extract(inventory, '$.channel') "
                               "from nodes").fetchall())
    db.close()
    # a default cluster is secured: its channels are TLS with its own certificates
    assert channels == {"n1": "direct, TLS", "n2": "direct, TLS", "n3": "direct, TLS"}
    if policy == "abort":
        assert {r["phase"] for r in rows} == {0} and status == "aborted"
    else:
        assert {r["phase"] for r in rows} == {0, 1, 2, 3} and status == "failed"
        assert all(r["status"] == "error" and "not run" in r["error"]
                   for r in rows if r["phase"] == 1)
        later = [r for r in rows if r["phase"] > 1]
        assert len(later) == 4 and all(r["status"] == "ok" and r["node"] != "n2"
                                       for r in later), later
