"""Faults of the run's processes (issue 11): a slot dead while idle, a second Ctrl-C, a
killed coordinator, processes outliving the run, a fresh scratch per phase, --resume."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import psutil
import pytest

from conftest import export_json, run_cli
from manybench import config
from waits import phases_stored, wait_for, wait_phases


def _db(out_dir: str) -> sqlite3.Connection:
    return sqlite3.connect(os.path.join(out_dir, "results.db"))


def _start(plan: str, out_dir: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out_dir,
                             "-q", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.e2e
def test_slot_dying_while_idle_is_replaced_and_warned(plan_file, tmp_path):
    # slot 1 idles through the 3 s command phase (workers = 1); killed then, the null
    # phase after it needs it
    plan = plan_file("""
        name = "idle"
        slots = 2
        [[task]]
        name = "busy"
        command = ["sleep", "3"]
        workers = 1
        [[task]]
        name = "after"
        kernel = "null"
        workers = 2
    """)
    out_dir = str(tmp_path / "res")
    proc = _start(plan, out_dir)
    me = psutil.Process(proc.pid)

    def idle_slot():
        try:
            slots = me.children()
            kids = {s.pid: s.children() for s in slots}
        except psutil.NoSuchProcess:   # a child came or went while looked at
            return None
        idle = [s for s in slots if not kids[s.pid]]
        return idle if len(slots) == 2 and len(idle) == 1 else None
    victim = wait_for(idle_slot, what="one busy slot and one idle")[0]
    victim.kill()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "slot" in err and "replaced" in err
    rows = export_json(out_dir)
    after = [r for r in rows if r["task"] == "after"]
    assert len(after) == 2 and all(r["status"] == "ok" for r in after), after
    kinds = [k for (k,) in _db(out_dir).execute("select kind from warnings")]
    assert "slot-replaced" in kinds


@pytest.mark.e2e
def test_more_signals_during_a_slow_abort_still_end_the_run_interrupted(plan_file, tmp_path):
    # the variant's teardown makes the abort slow; every further Ctrl-C or SIGTERM lands in it
    plan = plan_file("""
        name = "twice"
        repeat = 20
        [[task]]
        name = "nap"
        command = ["sleep", "0.2"]
        [[variant]]
        name = "slow"
        teardown = [["sleep", "3"], ["sleep", "3"], ["sleep", "3"]]
    """)
    out_dir = str(tmp_path / "res")
    proc = _start(plan, out_dir)
    wait_phases(out_dir, 2, proc)
    proc.send_signal(signal.SIGINT)
    for i in range(60):     # a burst: some land in the teardown, some in what follows it
        time.sleep(0.05)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM if i % 2 else signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "before the first phase" not in err
    assert "interrupted" in err
    status, = _db(out_dir).execute("select status from runs").fetchone()
    assert status == "interrupted"
    assert phases_stored(out_dir) >= 2


@pytest.mark.e2e
def test_a_killed_coordinator_is_reported_killed_not_running(plan_file, tmp_path):
    plan = plan_file("""
        name = "victim"
        repeat = 100
        [[task]]
        name = "nap"
        command = ["sleep", "0.2"]
    """)
    out_dir = str(tmp_path / "res")
    proc = _start(plan, out_dir)
    wait_phases(out_dir, 2, proc)

    def status_line() -> str:
        res = run_cli("report", out_dir)
        assert res.returncode == 0, res.stderr
        return next(line for line in res.stdout.splitlines() if line.startswith("status"))
    assert status_line().split() == ["status", "running"]
    proc.kill()
    proc.wait()
    assert status_line().split() == ["status", "killed"]


def test_a_run_whose_heartbeat_stopped_is_killed(tmp_path):
    # a coordinator on another host: only its heartbeat can tell
    from manybench.results.contract import RunInfo, RunNotes
    from manybench.results.liveness import status_of
    stale_s = config.timing("heartbeat.stale")
    now = time.time_ns()
    notes = RunNotes(pid=1, host="elsewhere", pid_started=1.0, heartbeat_ns=now)
    info = RunInfo("r", "n", "", {}, [], now, None, "running", {}, notes)
    assert status_of(info, now + int(stale_s * 1e9) // 2) == "running"
    assert status_of(info, now + int(stale_s * 2e9)) == "killed"
    ended = RunInfo("r", "n", "", {}, [], now, now, "finished", {}, notes)
    assert status_of(ended, now + int(stale_s * 2e9)) == "finished"


@pytest.mark.e2e
def test_scratch_is_fresh_for_every_phase(plan_file, tmp_path):
    # a tool that appends to its output file (hpcc) must find none left by an earlier phase
    plan = plan_file("""
        name = "fresh"
        repeat = 3
        [placement]
        workers = 2
        [[task]]
        name = "append"
        command = ["sh", "-c", "echo x >> {scratch}/out; echo lines $(wc -l < {scratch}/out) files $(ls -A {scratch} | wc -l)"]
        metrics.lines = 'lines (?P<value>\\d+)'
        metrics.files = 'files (?P<value>\\d+)'
    """)
    out_dir = str(tmp_path / "res")
    (tmp_path / "s").mkdir()
    res = run_cli("run", plan, "-o", out_dir, "-q", "--set", f"scratch={tmp_path}/s")
    assert res.returncode == 0, res.stderr
    rows = export_json(out_dir)
    assert len(rows) == 6
    assert [r["metrics"]["lines"] for r in rows] == [1] * 6
    # the slot's directory held only what this phase made
    assert [r["metrics"]["files"] for r in rows] == [1] * 6


def _marker() -> str:
    """A sleep duration no other process on the machine uses: its processes are ours."""
    return f"{time.time() % 1000 + 7000:.4f}{os.getpid() % 97}"


def _sleepers(marker: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
            out.append(p)
    return out


# A second task counts the first task's leftovers while the run goes on: "after each command
# phase every descendant is killed", not only at the end of the run.
COUNT = ('import psutil, sys; print("alive", sum(sys.argv[1] in " ".join(p.info["cmdline"] or '
         '[]) for p in psutil.process_iter(["cmdline"])) - 1)')


def _leftover_plan(plan_file, first: str, marker: str, extra: str = "") -> str:
    return plan_file(f"""
        name = "reap"
        repeat = 2
        [[task]]
        name = "first"
        command = {first}
        {extra}
        [[task]]
        name = "count"
        command = ["{sys.executable}", "-c", '{COUNT}', "{marker}"]
        metrics.alive = 'alive (?P<value>\\d+)'
    """)


def _no_leftovers(plan: str, tmp_path, marker: str, first_status: str = "ok") -> None:
    out_dir = str(tmp_path / "res")
    try:
        res = run_cli("run", plan, "-o", out_dir, "-q")
        assert "Traceback" not in res.stderr
        rows = export_json(out_dir)
        assert {r["status"] for r in rows if r["task"] == "first"} == {first_status}, rows
        counts = [r["metrics"].get("alive") for r in rows if r["task"] == "count"]
        assert counts == [0, 0], counts
        assert _sleepers(marker) == []
    finally:
        for p in _sleepers(marker):   # ours (the marker): never leave them to the machine
            p.kill()


@pytest.mark.e2e
def test_a_commands_background_children_die_with_its_phase(plan_file, tmp_path):
    m = _marker()
    plan = _leftover_plan(plan_file, f'["sh", "-c", "sleep {m} & echo hi"]', m)
    _no_leftovers(plan, tmp_path, m)


@pytest.mark.e2e
def test_a_setsid_grandchild_dies_after_a_timeout(plan_file, tmp_path):
    m = _marker()
    plan = _leftover_plan(plan_file, f'["sh", "-c", "setsid sleep {m} & sleep 30"]', m,
                          "timeout = 0.5")
    _no_leftovers(plan, tmp_path, m, "timeout")


@pytest.mark.e2e
@pytest.mark.parametrize("cgroup", ["1", "0"])
def test_the_command_of_a_killed_slot_dies_with_it(plan_file, tmp_path, monkeypatch, cgroup):
    # the command's parent is its slot: it kills the slot and lives on (until reaped).
    # Without a cgroup the agent still kills the command's process group.
    monkeypatch.setenv("MANYBENCH_CGROUP", cgroup)
    m = _marker()
    plan = _leftover_plan(plan_file, f'["sh", "-c", "sleep {m} & kill -9 $PPID; wait"]', m)
    _no_leftovers(plan, tmp_path, m, "error")


RESUMABLE = """
    name = "long"
    repeat = 8
    [placement]
    workers = 2
    [[task]]
    name = "nap"
    command = ["sleep", "0.4"]
"""


def _interrupted_run(plan_file, tmp_path, kill: bool = False, text: str = RESUMABLE
                     ) -> tuple[str, str]:
    plan = plan_file(text)
    out_dir = str(tmp_path / "res")
    proc = _start(plan, out_dir, "--set", "task.nap.timeout=30")
    wait_phases(out_dir, 2, proc)
    proc.send_signal(signal.SIGKILL if kill else signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == (-9 if kill else 130)
    assert phases_stored(out_dir) < 8
    return plan, out_dir


def _resumed_in_full(out_dir: str) -> None:
    db = _db(out_dir)
    assert db.execute("select count(*), min(status) from runs").fetchone() == (1, "finished")
    idx = [i for (i,) in db.execute("select idx from phases order by idx")]
    assert idx == list(range(8))
    assert db.execute("select count(distinct status) from phases").fetchone() == (1,)
    rows = export_json(out_dir)
    assert len(rows) == 16 and all(r["status"] == "ok" for r in rows)
    assert len({r["run"] for r in rows}) == 1


@pytest.mark.e2e
def test_resume_continues_an_interrupted_run_into_the_same_run(plan_file, tmp_path):
    plan, out_dir = _interrupted_run(plan_file, tmp_path)
    res = run_cli("run", plan, "--set", "task.nap.timeout=30", "--resume", out_dir, "-q")
    assert res.returncode == 0, res.stderr
    _resumed_in_full(out_dir)


@pytest.mark.e2e
def test_resume_of_a_killed_run_needs_no_plan_and_refuses_a_finished_one(plan_file, tmp_path):
    plan, out_dir = _interrupted_run(plan_file, tmp_path, kill=True)
    res = run_cli("run", "--resume", out_dir, "-q")     # the stored plan and its --set
    assert res.returncode == 0, res.stderr
    _resumed_in_full(out_dir)
    assert os.listdir(os.path.join(out_dir, "scratch")) == []   # the killed run's too
    again = run_cli("run", "--resume", out_dir, "-q")
    assert again.returncode == 2 and "finished" in again.stderr and "Traceback" not in again.stderr


@pytest.mark.e2e
def test_resume_refuses_a_changed_plan(plan_file, tmp_path):
    plan, out_dir = _interrupted_run(plan_file, tmp_path)
    changed = plan_file(RESUMABLE.replace("0.4", "0.5"), "changed.toml")
    res = run_cli("run", changed, "--set", "task.nap.timeout=30", "--resume", out_dir, "-q")
    assert res.returncode == 2 and "plan" in res.stderr and "changed" in res.stderr, res.stderr
    other_set = run_cli("run", plan, "--set", "task.nap.timeout=31", "--resume", out_dir, "-q")
    assert other_set.returncode == 2 and "task" in other_set.stderr, other_set.stderr
    assert "Traceback" not in res.stderr + other_set.stderr
    assert _db(out_dir).execute("select status from runs").fetchone() == ("interrupted",)


@pytest.mark.e2e
def test_resume_checks_the_plan_before_anything_starts_as_run_does(plan_file, tmp_path):
    """The same preflight as `run`: a program gone since the run started is exit 2 with the
    message a fresh run gives, and the stored run is left as it was."""
    prog = tmp_path / "nap.sh"
    prog.write_text("#!/bin/sh\nexec sleep 0.4\n")
    prog.chmod(0o755)
    plan, out_dir = _interrupted_run(plan_file, tmp_path,
                                     text=RESUMABLE.replace('["sleep", "0.4"]', f'["{prog}"]'))
    kept = phases_stored(out_dir)
    prog.unlink()
    fresh = run_cli("run", plan, "--set", "task.nap.timeout=30", "-o", str(tmp_path / "new"), "-q")
    assert fresh.returncode == 2 and "not found" in fresh.stderr, fresh.stderr
    res = run_cli("run", plan, "--set", "task.nap.timeout=30", "--resume", out_dir, "-q")
    assert (res.returncode, res.stderr) == (2, fresh.stderr)
    assert _db(out_dir).execute("select status from runs").fetchone() == ("interrupted",)
    assert phases_stored(out_dir) == kept


STOP_S = 2.0


@pytest.mark.e2e
def test_a_stopped_slots_stall_is_flagged_not_plain_ok(plan_file, tmp_path):
    plan = plan_file("""
        name = "stall"
        repeat = 150
        [placement]
        workers = 2
        [[task]]
        name = "tick"
        kernel = "null"
    """)
    out_dir = str(tmp_path / "res")
    proc = _start(plan, out_dir)
    wait_phases(out_dir, 5, proc)
    slot = psutil.Process(proc.pid).children()[1]
    slot.suspend()               # SIGSTOP, as an operator or a debugger would
    time.sleep(STOP_S)
    slot.resume()
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err
    rows = export_json(out_dir)
    flagged = [r for r in rows if r["metrics"].get("stall_s")]
    assert flagged and all(r["slot"] == 1 for r in flagged), flagged
    assert max(r["metrics"]["stall_s"] for r in flagged) > STOP_S / 2   # most of the stop
    assert len(flagged) < 5      # the stall, not every phase
    assert "STRAGGLER" in err
    kinds = [k for (k,) in _db(out_dir).execute("select kind from warnings")]
    assert "straggler" in kinds


def test_stall_peers_are_the_same_tasks_slots():
    from manybench.record import Record
    from manybench.run.stalls import flag_stalls

    def rec(task: str, slot: int, seconds: float) -> Record:
        return Record(run="r", phase=0, task=task, kernel="command", variant="", rep=0,
                      workers=4, node="n", slot=slot, cpu=slot, t0_ns=10**18,
                      start_ns=10**18, end_ns=10**18 + int(seconds * 1e9),
                      elapsed_s=seconds, ops=1, bytes=0, status="ok")
    group = [rec("short", 0, 0.1), rec("short", 1, 0.1), rec("long", 2, 5.0),
             rec("long", 3, 5.1)]
    assert flag_stalls(group) == []            # a group's long task is no stall
    stalled = [rec("t", 0, 0.1), rec("t", 1, 0.1), rec("t", 2, 2.0)]
    assert [r.slot for r in flag_stalls(stalled)] == [2]
    assert stalled[2].metrics["stall_s"] == pytest.approx(1.9)


@pytest.mark.e2e
def test_a_killed_agents_cgroups_are_swept_by_the_next_run(plan_file, tmp_path):
    from manybench.node.reaper import cgroup2_dir, sweep_stale
    base = cgroup2_dir()
    if base is None:
        pytest.skip("no cgroup v2 here (the cgroup layer is best effort)")
    plan = plan_file("""
        name = "orphans"
        [placement]
        workers = 2
        [[task]]
        name = "long"
        command = ["sleep", "30"]
    """)
    out_dir = str(tmp_path / "res")
    proc = _start(plan, out_dir)
    mine = f"manybench-{proc.pid}-"
    wait_for(lambda: len([n for n in os.listdir(base) if n.startswith(mine)]) == 2,
             what="the run's two slot cgroups")
    proc.kill()                 # nothing of the run can clean up after SIGKILL
    proc.wait()
    swept = sweep_stale()       # as the next run's agent does when it starts
    assert len([n for n in swept if n.startswith(mine)]) == 2
    assert not [n for n in os.listdir(base) if n.startswith(mine)]
