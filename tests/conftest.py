"""Shared helpers: run the real command line in a subprocess, write plans to temp files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

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
