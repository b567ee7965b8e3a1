"""The same phases across namespace nodes on Dask: placement, corrected clocks, node loss."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time

import pytest

from cluster_lab import FAKETIME_SHIFT_S, DaskLab
from conftest import client_security, export_json, run_cli
from waits import LEFTOVER_S, wait_descendant, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def four_nodes():
    """n1..n4 with 2 slots each; n3's clock runs FAKETIME_SHIFT_S ahead (libfaketime)."""
    with DaskLab(4, slots=2, shifted=3) as lab:
        yield lab


def _phases(rows):
    out = {}
    for r in rows:
        out.setdefault(r["phase"], []).append(r)
    return out


def test_spread_over_nodes_with_corrected_clocks(four_nodes, plan_file, tmp_path):
    plan = plan_file("""
        name = "spread"
        repeat = 5
        [placement]
        workers = [4, 8]
        order = "spread"
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "--scheduler", four_nodes.scheduler, timeout=300,
                  default_noise=True)     # the floors' default length, checked below
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out)
    for recs in _phases(rows).values():
        per_node = {}
        for r in recs:
            per_node[r["node"]] = per_node.get(r["node"], 0) + 1
        assert set(per_node) == {"n1", "n2", "n3", "n4"}          # spread: every node first
        assert set(per_node.values()) == {recs[0]["workers"] // 4}
    # the shifted node's offset is estimated (node minus coordinator), the others near zero
    off = {r["node"]: r["metrics"]["clock_offset_ns"] for r in rows}
    assert abs(off["n3"] - FAKETIME_SHIFT_S * 1e9) < 0.5e6, off
    assert all(abs(off[n]) < 0.5e6 for n in ("n1", "n2", "n4")), off
    assert all(r["metrics"]["clock_error_ns"] > 0 for r in rows)
    # corrected: nobody starts before T0 in the coordinator's timebase, and the shifted node
    # is not 4 ms apart from the others (it would be if T0 or its stamps were not shifted)
    assert min(r["start_ns"] - r["t0_ns"] for r in rows) >= -0.5e6
    skews = [max(r["start_ns"] for r in g) - min(r["start_ns"] for r in g)
             for g in _phases(rows).values()]
    assert statistics.median(skews) < FAKETIME_SHIFT_S * 1e9 / 2
    assert "clock n3: offset" in res.stdout
    # four nodes of one machine on the same cpus: one floor measured (by n1, for 0.4 s),
    # stored with each node as the machine's (issue 30, item 5: int31 measured four in turn)
    db = sqlite3.connect(os.path.join(out, "results.db"))
    floors = {name: json.loads(f) for name, f in db.execute(
        "SELECT name, json_extract(inventory, '$.noise') FROM nodes")}
    machine = db.execute("SELECT DISTINCT machine FROM nodes").fetchall()
    db.close()
    assert set(floors) == {"n1", "n2", "n3", "n4"} and len(machine) == 1
    assert all(f == floors["n1"] for f in floors.values()), floors
    assert (floors["n1"]["seconds"], floors["n1"]["measured_by"], floors["n1"]["machine"],
            floors["n1"]["nodes"]) == (0.4, "n1", machine[0][0], 4)
    assert ("noise floor n1, n2, n3, n4: one machine's floor, boot id "
            f"{machine[0][0][:8]}, measured once by node n1 for its 4 nodes on the same cpus: "
            "stalls up to") in " ".join(res.stdout.split())     # the report wraps its lines
    # four namespace nodes of this one machine: said in the header and stored as a warning
    # naming the cpus they share (issue 17, item 5)
    assert "nodes n1, n2, n3, n4 run on one machine" in res.stdout
    assert "share its" in res.stdout
    db = sqlite3.connect(os.path.join(out, "results.db"))
    shared = [m for (m,) in db.execute("SELECT message FROM warnings "
                                      "WHERE kind = 'shared-machine'")]
    db.close()
    assert len(shared) == 1 and "cpus 0-" in shared[0], shared


def test_pack_and_task_nodes(four_nodes, plan_file, tmp_path):
    plan = plan_file("""
        [placement]
        workers = 2
        order = "pack"
        [[task]]
        name = "packed"
        kernel = "null"
        [[task]]
        name = "pinned"
        kernel = "null"
        nodes = ["n4", "n2"]
        workers = 3
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q", "--scheduler", four_nodes.scheduler, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = export_json(out)
    packed = [r["node"] for r in rows if r["task"] == "packed"]
    assert packed == ["n1", "n1"]
    pinned = sorted(r["node"] for r in rows if r["task"] == "pinned")
    assert pinned == ["n4", "n4", "n2"] or pinned == ["n2", "n4", "n4"]


def test_plan_that_does_not_fit_the_cluster_exits_2(four_nodes, plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "a"
        kernel = "null"
        nodes = ["n9"]
        [[task]]
        name = "b"
        kernel = "null"
        workers = 9
    """)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "--scheduler",
                  four_nodes.scheduler, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "task.a.nodes" in res.stderr and "task.b.workers" in res.stderr
    assert "Traceback" not in res.stderr


def test_unreachable_scheduler_exits_2(plan_file, tmp_path):
    plan = plan_file('[[task]]\nname = "a"\nkernel = "null"\n')
    # Dask's own setting: how long the coordinator tries (30 s by default)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    res = run_cli("run", plan, "--scheduler", "tls://127.0.0.1:9", timeout=120, env=env)
    assert res.returncode == 2
    assert "scheduler" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("policy", ["continue", "abort"])
def test_node_lost_mid_phase(policy, plan_file, tmp_path):
    # phases 0, 1: 3 workers; 2, 3: 2 workers (the worker counts' sweep, repeat 2)
    plan = plan_file(f"""
        name = "loss"
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
        wait_descendant(lab.workers["n2"].pid, ["sleep", "2"], proc)   # the first phase
        lab.workers["n2"].send_signal(signal.SIGKILL)     # our own worker, by its pid
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "NODE LOST" in err and "n2" in err
    rows = export_json(out)
    first = [r for r in rows if r["phase"] == 0]
    assert {r["node"]: r["status"] for r in first} == {"n1": "ok", "n2": "lost", "n3": "ok"}
    status = sqlite3.connect(os.path.join(out, "results.db")).execute(
        "select status from runs").fetchone()[0]
    if policy == "abort":
        assert {r["phase"] for r in rows} == {0} and status == "aborted"
    else:
        # no work goes to the lost node again: a phase that no longer fits the nodes left
        # is not run (and says why), one that fits runs on them, labelled with its workers
        assert {r["phase"] for r in rows} == {0, 1, 2, 3} and status == "failed"
        skipped = [r for r in rows if r["phase"] == 1]
        assert skipped and all(r["status"] == "error" and "not run" in r["error"]
                               and "n2" in r["error"] for r in skipped), skipped
        later = [r for r in rows if r["phase"] > 1]
        assert len(later) == 4 and all(r["status"] == "ok" and r["workers"] == 2
                                       and r["node"] != "n2" for r in later), later


def test_clock_bound_above_tolerance_is_reported_loudly(four_nodes, plan_file, tmp_path):
    plan = plan_file("""
        clock_tolerance = "1ns"
        [placement]
        workers = 4
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "--scheduler", four_nodes.scheduler, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("CLOCK WARNING") >= 4      # no echo is faster than 2 ns
    assert "CLOCK WARNING" in res.stdout               # and the report says so too


def test_ctrl_c_on_a_cluster_stops_every_node(four_nodes, plan_file, tmp_path):
    import psutil
    marker = f"{time.time() % 1000 + 6000:.3f}"
    plan = plan_file(f"""
        [placement]
        workers = 8
        [[task]]
        name = "long"
        command = ["sleep", "{marker}"]
    """)
    out = str(tmp_path / "res")
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                             "--scheduler", four_nodes.scheduler], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def sleepers():
        return [p for p in psutil.process_iter(["cmdline"])
                if marker in " ".join(p.info["cmdline"] or [])]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(sleepers()) < 8:
        time.sleep(0.2)
    assert len(sleepers()) == 8                       # every node's slots are running it
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    wait_for(lambda: not sleepers(), "end of every node's slots' commands", LEFTOVER_S,
             detail=sleepers)
    db = sqlite3.connect(os.path.join(out, "results.db"))
    assert db.execute("select status from runs").fetchone()[0] == "interrupted"


def test_a_killed_coordinators_nodes_stop_their_slots_when_the_lease_runs_out(plan_file,
                                                                               tmp_path):
    """Nothing renews the nodes' leases after SIGKILL: each node's agent stops its slots and
    their commands within the lease (engines/lease.py), and `report` says the run was killed.
    The lease is the coordinator's (6 s, sent in its Start), not the nodes' own (300 s)."""
    import psutil
    lease_s = 6.0
    marker = f"{time.time() % 1000 + 6000:.3f}"
    plan = plan_file(f"""
        [placement]
        workers = 2
        [[task]]
        name = "long"
        command = ["sh", "-c", "sleep {marker} & sleep {marker}"]
    """)
    out = str(tmp_path / "res")
    with DaskLab(2, slots=1, env={"MANYBENCH_LEASE__LENGTH": "300s"}) as lab:
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out,
                                 "-q", "--scheduler", lab.scheduler], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "MANYBENCH_LEASE__LENGTH": f"{lease_s}s",
                                     "MANYBENCH_LEASE__RENEW": "1s"})

        def sleepers():
            return [p for p in psutil.process_iter(["cmdline"])
                    if (p.info["cmdline"] or [""])[0] == "sleep"
                    and marker in " ".join(p.info["cmdline"])]
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and len(sleepers()) < 4:
                time.sleep(0.2)
            assert len(sleepers()) == 4               # both nodes' commands and children
            time.sleep(lease_s / 2)                   # renewed: the run goes on meanwhile
            assert len(sleepers()) == 4
            proc.kill()                               # our own coordinator, by its pid
            proc.communicate(timeout=30)
            killed_at = time.monotonic()
            while sleepers() and time.monotonic() < killed_at + lease_s + 15:
                time.sleep(0.2)
            assert sleepers() == []       # gone before their own end: the lease ran out
        finally:
            for p in sleepers():                      # ours (the marker)
                p.kill()
    status = run_cli("report", out).stdout
    assert any(line.split()[:2] == ["status", "killed"] for line in status.splitlines())


def test_phases_on_the_direct_channel_hold_the_lease_without_renewals(tmp_path):
    """While rounds come on the agents' direct channels, the coordinator renews no lease over
    Dask's RPC, and the workers keep their nodes past several lease lengths (the agents'
    stamps: node/lease.py); with no round, renewals resume; with neither, the nodes stop
    within the lease."""
    from distributed import Client
    from manybench import config
    from manybench.engines import dask as engine_mod
    from manybench.node.protocol import Ping
    lease_s, every_s = 3.0, 0.6
    with DaskLab(2, slots=1) as lab, config.set({"lease.length": lease_s,
                                                 "lease.renew": every_s}):
        client = Client(lab.scheduler, timeout="30s", security=client_security())
        engine = engine_mod.DaskEngine(client, on_close=client.close, expected=2)
        engine.start("lease", 1, str(tmp_path), False)
        try:
            names = [n.name for n in engine.nodes]
            assert all(engine.fanout.direct(n) for n in names)
            renewer = engine.renewer

            def ping() -> dict:
                return engine._round({n: Ping() for n in names})
            first = renewer.sent                          # the first renewal: every node
            assert first == 2
            end = time.monotonic() + 2 * lease_s
            while time.monotonic() < end:                 # rounds only, for two leases
                assert ping() == {n: None for n in names}
                time.sleep(0.05)
            # 10 ticks x 2 nodes without the stamps; a round slowed by load may cost one
            assert renewer.sent - first <= 4
            time.sleep(4 * every_s)                       # no round: renewed over Dask
            assert renewer.sent - first >= 4
            assert ping() == {n: None for n in names}
            engine._submit(renewer.stop()).result()       # as if the coordinator were gone
            time.sleep(lease_s + 1.0)
            got = ping()
            assert all(isinstance(r, BaseException) for r in got.values()), got
        finally:
            engine.close()


def test_dry_run_with_a_scheduler_places_the_phases_on_its_nodes(four_nodes, plan_file,
                                                                  tmp_path):
    """--dry-run --scheduler ADDR (issue 17, item 8): the placement is the cluster's (its
    nodes, their slots and cpus), not this machine's; nothing is run or stored."""
    plan = plan_file("""
        [placement]
        workers = [4, 9]
        order = "spread"
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    res = run_cli("run", plan, "--dry-run", "--scheduler", four_nodes.scheduler,
                  cwd=str(tmp_path), timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr     # 9 workers > the 4 x 2 slots
    assert "4 nodes" in res.stdout and "8 slots" in res.stdout, res.stdout
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("placement workers=4"))
    assert all(f"{n}:" in line for n in ("n1", "n2", "n3", "n4")), line
    assert "9 workers but 8 slots" in res.stderr, res.stderr
    assert not (tmp_path / "manybench-results").exists()
