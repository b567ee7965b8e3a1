"""Shared helpers: run the real command line in a subprocess, write plans to temp files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]     # test_require.py tests the hook below in a child pytest

# MANYBENCH_REQUIRE=all (set by .ci/run): a test that skips because something it needs is
# missing (the native build, netns, Slurm, faketime, fio, ...) fails instead, so a CI run
# cannot go green having tested less. A comma-separated list of words requires only the
# components whose skip reasons name them (MANYBENCH_REQUIRE=slurm,netns).
REQUIRE = os.environ.get("MANYBENCH_REQUIRE", "").strip()


def _required(reason: str) -> bool:
    if not REQUIRE:
        return False
    words = [w.strip().lower() for w in REQUIRE.split(",") if w.strip()]
    return "all" in words or any(w in reason.lower() for w in words)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not hasattr(rep, "wasxfail") and isinstance(rep.longrepr, tuple):
        reason = str(rep.longrepr[2])
        if _required(reason):
            rep.outcome = "failed"
            rep.longrepr = f"MANYBENCH_REQUIRE={REQUIRE}: required but skipped: {reason}"

# Children run in other directories (batch jobs, SSH logins): a relative import path from
# the developer's shell (PYTHONPATH=src) must still find the package there.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "manybench", *args], capture_output=True,
                          text=True, timeout=timeout, **kw)


@pytest.fixture
def plan_file(tmp_path):
    """Write a plan (dedented TOML) and return its path; {tmp} is replaced by tmp_path."""
    def write(text: str, name: str = "plan.toml") -> str:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).replace("{tmp}", str(tmp_path)))
        return str(p)
    return write


def export_json(directory: str) -> list[dict]:
    out = run_cli("export", directory, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def cli():
    return run_cli
