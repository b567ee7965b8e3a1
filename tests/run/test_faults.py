"""Faults lose nothing measured: Ctrl-C, a slot that dies mid-phase, bad input."""
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

pytestmark = pytest.mark.e2e


def _db(out_dir: str) -> sqlite3.Connection:
    return sqlite3.connect(os.path.join(out_dir, "results.db"))


def test_ctrl_c_keeps_finished_phases_and_leaves_no_process(plan_file, tmp_path):
    marker = f"{time.time() % 1000 + 5000:.3f}"
    plan = plan_file(f"""
        name = "intr"
        repeat = 50
        [placement]
        workers = 2
        [[task]]
        name = "nap"
        command = ["sleep", "0.2"]
        [[task]]
        name = "long"
        command = ["sleep", "{marker}"]
    """)
    out_dir = str(tmp_path / "res")
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out_dir, "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait until some phases are committed, then press Ctrl-C
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline and done < 3:
        time.sleep(0.2)
        try:
            done = _db(out_dir).execute("select count(*) from phases").fetchone()[0]
        except sqlite3.Error:
            pass
    assert done >= 3
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    db = _db(out_dir)
    assert db.execute("select status from runs").fetchone()[0] == "interrupted"
    kept = db.execute("select count(*) from phases").fetchone()[0]
    assert done <= kept < 100      # stopped where it was: not every phase was run
    rows = export_json(out_dir)
    assert sum(r["status"] == "ok" for r in rows) >= 2 * done - 2
    gone = psutil.wait_procs(children, timeout=5)[1]
    assert gone == [], f"left behind: {gone}"


def test_slot_crash_mid_phase_gives_error_record_and_is_replaced(plan_file, tmp_path):
    # the command's parent is its slot: killing it is a slot crash mid-phase
    plan = plan_file("""
        repeat = 3
        [placement]
        workers = 2
        [[task]]
        name = "crash"
        command = ["/bin/sh", "-c", "if [ {rank} = 1 ] && [ {rep} = 1 ]; then kill -9 $PPID; fi"]
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q")
    assert res.returncode == 1, res.stderr
    rows = export_json(out_dir)
    assert len(rows) == 6
    bad = [r for r in rows if r["status"] != "ok"]
    assert len(bad) == 1
    assert bad[0]["rep"] == 1 and bad[0]["slot"] == 1
    assert "slot died" in bad[0]["error"]
    # the replacement slot ran the next repetition
    assert any(r["rep"] == 2 and r["slot"] == 1 and r["status"] == "ok" for r in rows)


@pytest.mark.parametrize("body, field", [
    ('[[task]]\nname = "a"\nkernel = "nope"\n', "task.a.kernel"),
    ('[[task]]\nname = "a"\nkernel = "io.write"\nsize = "1XB"\n', "task.a.size"),
    ('[[task]]\nname = "a"\nkernel = "io.write"\nsize = "1MiB"\nduration = "ten"\n', "task.a.duration"),
    ('[[task]]\nname = "a"\nkernel = "io.write"\nsize = "1MiB"\nblok = "4k"\n', "task.a.blok"),
    ('[[task]]\nname = "a"\nkernel = "io.write"\nsize = []\n', "task.a.size"),
    ('[[task]]\nname = "a"\nkernel = "io.write"\nsize = "1MiB"\ndir = "/nonexistent/x"\n', "task.a.dir"),
    ('[[task]]\nname = "a"\nkernel = "null"\n[[task]]\nname = "a"\nkernel = "null"\n', "task"),
    ('[[task]]\nname = "a"\ncommand = ["echo", "{nothing}"]\n', "task.a.command"),
    ('slots = 2\n[placement]\nworkers = [1, 4]\n[[task]]\nname = "a"\nkernel = "null"\n', "placement.workers"),
    ('bogus = 1\n[[task]]\nname = "a"\nkernel = "null"\n', "bogus"),
    ('[[task]\nname = "a"\n', "plan.toml:1:"),
])
def test_bad_plans_exit_2_naming_the_field(plan_file, tmp_path, body, field):
    plan = plan_file(body)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert field in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "res").exists()


def test_unwritable_directory_is_refused(plan_file, tmp_path):
    if os.geteuid() == 0:
        target = "/proc/1"   # root may write anywhere; /proc entries refuse directories
    else:
        target = str(tmp_path / "ro")
        os.mkdir(target, 0o500)
    plan = plan_file(f'[[task]]\nname = "a"\nkernel = "meta.mkdir"\nitems = 1\ndir = "{target}"\n')
    res = run_cli("run", plan, "-o", str(tmp_path / "res"))
    assert res.returncode == 2
    assert "task.a.dir" in res.stderr


def test_bad_arguments_exit_2(plan_file, tmp_path):
    missing = run_cli("run", str(tmp_path / "missing.toml"))
    assert missing.returncode == 2 and "plan file not found" in missing.stderr
    assert run_cli("report", str(tmp_path)).returncode == 2
    assert run_cli("export", str(tmp_path), "--format", "xml").returncode == 2
    # a malformed --set on a plan that exists: the --set is what is refused, nothing runs
    plan = plan_file('[[task]]\nname = "a"\nkernel = "null"\n')
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "--set", "novalue")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--set 'novalue': expected KEY=VALUE" in res.stderr
    assert not (tmp_path / "res").exists()


def test_set_override_applies(plan_file, tmp_path):
    plan = plan_file('[[task]]\nname = "a"\nkernel = "null"\n')
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q", "--set", "placement.workers=[1,2]",
                  "--set", "repeat=2")
    assert res.returncode == 0, res.stderr
    assert len(export_json(out_dir)) == (1 + 2) * 2
