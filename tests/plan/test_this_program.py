"""`{manybench}` names the running manybench (this_program.py): a plan's task that calls
manybench calls the same one, even when manybench was started by its full path from a venv
that is not activated and PATH holds no manybench (issue 31, defect 7: examples/containers-003
was refused, "program 'manybench' is not found on PATH")."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import export_json, run_cli
from suite_paths import ROOT
from manybench import this_program

EXAMPLES = ROOT / "examples"
pytestmark = pytest.mark.e2e
BARE = {**os.environ, "PATH": "/usr/bin:/bin"}      # no venv, no pyenv shims: no manybench


def test_the_template_is_the_running_install():
    prog = this_program.path()
    assert os.path.isabs(prog) and os.access(prog, os.X_OK)
    said = subprocess.run([prog, "--version"], capture_output=True, text=True, env=BARE)
    ours = subprocess.run([sys.executable, "-m", "manybench", "--version"],
                          capture_output=True, text=True)
    assert said.returncode == 0 and said.stdout.split(", version")[1] == \
        ours.stdout.split(", version")[1]
    # the same interpreter, so the same install: its script starts it by its path
    shebang = Path(prog).read_text().splitlines()[0]
    assert os.path.realpath(shebang[2:].split()[0]) == os.path.realpath(sys.executable)


def test_a_task_calls_the_running_manybench_without_it_on_path(plan_file, tmp_path):
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file("""
        name = "self"
        [placement]
        workers = 1
        [[task]]
        name = "version"
        command = ["{manybench}", "--version"]
        """), "-o", out, "-q", env=BARE)
    assert done.returncode == 0, done.stderr[-2000:]
    (rec,) = export_json(out)
    assert rec["status"] == "ok" and "manybench, version" in rec["stdout"]


def test_examples_that_call_manybench_pass_their_dry_run_without_it_on_path():
    for name in ("containers-003", "interconnects-001", "ranks-threads-004"):
        plan = EXAMPLES / name / "plan.toml"
        assert "{manybench}" in plan.read_text()
        done = run_cli("run", str(plan), "--dry-run", env=BARE)
        assert done.returncode == 0 and "not found on PATH" not in done.stderr, \
            (name, done.stderr[-2000:])
