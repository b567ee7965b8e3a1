"""A simulated cluster (--simulate): the real coordinator, channels, store and report against
simulated nodes in local processes, speaking the real protocol over real sockets."""
from __future__ import annotations

import os
import sqlite3

import pytest

from builders import stored_inventories
from conftest import export_json, run_cli

pytestmark = pytest.mark.e2e

PLAN = """
    name = "sim"
    repeat = 4
    on_node_loss = "continue"
    [placement]
    workers = [{workers}]
    [[task]]
    name = "sync"
    kernel = "null"
"""


def _warnings(out: str) -> list[tuple[str, str]]:
    db = sqlite3.connect(os.path.join(out, "results.db"))
    got = db.execute("SELECT kind, message FROM warnings").fetchall()
    db.close()
    return got


def test_simulated_nodes_run_every_phase_with_their_clocks_corrected(plan_file, tmp_path):
    plan = plan_file(PLAN.format(workers=24))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "--simulate", "6x4,offset=3ms,delay=1ms,processes=2",
                  timeout=120)
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out)
    assert len(rows) == 4 * 24 and all(r["status"] == "ok" for r in rows)
    assert {r["node"] for r in rows} == {f"sim{i}" for i in range(1, 7)}
    nodes = stored_inventories(out)
    truth = {n: inv["simulated"]["true_offset_ns"] for n, inv in nodes.items()}
    assert max(abs(t) for t in truth.values()) > 0.5e6        # clocks really differ
    for r in rows:
        m = r["metrics"]
        # each node's offset as measured through its echo, within its bound (and 50 us)
        assert abs(m["clock_offset_ns"] - truth[r["node"]]) <= m["clock_error_ns"] + 50_000
        # its stamps moved into the coordinator's clock: nobody starts before T0
        assert r["start_ns"] >= r["t0_ns"] - m["clock_error_ns"] - 50_000
    # the run and every node say they were simulated
    assert any(k == "simulated" for k, _ in _warnings(out))
    assert "SIMULATED" in res.stderr + res.stdout
    assert all(inv["channel"] == "direct" for inv in nodes.values())


def test_a_simulated_node_that_dies_is_lost_and_the_run_goes_on(plan_file, tmp_path):
    # 8 workers on 8 nodes of 2 slots: the nodes left after a loss still hold a phase
    plan = plan_file(PLAN.format(workers=8).replace("repeat = 4", "repeat = 12"))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "--simulate", "8x2,loss=0.05,seed=3", timeout=120)
    assert res.returncode == 1, res.stderr + res.stdout     # nodes lost: the run says so
    assert "NODE LOST" in res.stderr, res.stderr
    rows = export_json(out)
    by_phase: dict[int, list[dict]] = {}
    for r in rows:
        by_phase.setdefault(r["phase"], []).append(r)
    assert sorted(by_phase) == list(range(12)) and all(len(g) == 8 for g in by_phase.values())
    lost = {r["node"]: r["phase"] for r in rows if r["status"] == "lost"}
    assert lost, "seed 3 loses a node within 12 phases of 8"
    for r in rows:      # a lost node's phase: the others' results kept; later: not placed
        if r["node"] in lost and r["phase"] >= lost[r["node"]]:
            assert r["phase"] == lost[r["node"]] and r["status"] == "lost", r
        else:
            assert r["status"] == "ok", r


@pytest.mark.parametrize("spec, field", [
    ("1000", "NODESxSLOTS"), ("4x2,delay=soon", "delay=soon"), ("4x2,loss=2", "loss=2"),
    ("4x2,color=red", "unknown option"), ("0x2", "nodes must be")])
def test_a_bad_simulate_is_refused_naming_it(plan_file, tmp_path, spec, field):
    plan = plan_file(PLAN.format(workers=2))
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "--simulate", spec)
    assert res.returncode == 2
    assert "--simulate" in res.stderr and field in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_a_report_of_many_nodes_sums_their_clocks_up(plan_file, tmp_path):
    plan = plan_file(PLAN.format(workers=12))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q", "--simulate", "12x1,offset=2ms")
    assert res.returncode == 0, res.stderr
    rep = run_cli("report", out).stdout.replace("\n", " ")
    assert "clocks of 12 nodes: offsets" in rep and "clock sim01:" not in rep
    assert "sim01, ..., sim12" in rep
    assert "host           simulated: 12 nodes x 1 slots" in rep


def _few_open_files() -> None:
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))


def test_more_nodes_than_the_usual_open_file_limit_are_reached(plan_file, tmp_path):
    # a socket and an echo per node: 150 nodes need more than a soft limit of 128 files
    plan = plan_file(PLAN.format(workers=150).replace("repeat = 4", "repeat = 2"))
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q", "--fanout", "off",
                  "--simulate", "150x1", preexec_fn=_few_open_files, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]


def test_ctrl_c_in_the_runs_end_checks_keeps_every_phase_and_resume_makes_them(plan_file,
                                                                              tmp_path):
    """A Ctrl-C once every phase is stored (as the last commits, or while the end's checks
    read them back: seconds at 1,000 x 64): exit 130, every phase kept, the message says so
    and names --resume, which runs nothing again and ends the run finished, its checks
    made."""
    import signal
    import subprocess
    import sys
    import time
    plan = plan_file(PLAN.format(workers=64_000).replace("repeat = 4", "repeat = 3"))
    out = str(tmp_path / "res")
    os.makedirs(out)
    run = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                            "--simulate", "1000x64", "--set", "noise=0.01s"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = os.path.join(out, "results.db")

    def stored() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                return con.execute("SELECT COUNT(*) FROM phases").fetchone()[0]
        except sqlite3.Error:
            return 0
    end = time.monotonic() + 240
    while run.poll() is None and stored() < 3 and time.monotonic() < end:
        time.sleep(0.02)
    run.send_signal(signal.SIGINT)          # our own child, by its pid
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err[-2000:]
    assert "interrupted after the last phase: every phase is kept" in err, err
    assert stored() == 3
    # on the run's own simulated nodes: a resume on this machine started 64,000 slots here
    again = run_cli("run", "--resume", out, "-q", timeout=240)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming where the run ran: --simulate 1000x64" in again.stderr
    con = sqlite3.connect(db)
    assert con.execute("SELECT status FROM runs").fetchall() == [("finished",)]
    assert con.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 3 * 64_000
    con.close()
