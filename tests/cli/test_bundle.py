"""`manybench bundle DIR`: the wheels it writes install manybench into a fresh venv inside a
network namespace with no route out, and the installed manybench runs a plan there."""
from __future__ import annotations

import os
import subprocess
import sys


import pytest

from conftest import run_cli
from netns import IP, require_netns
from suite_paths import ROOT

# Slow (builds manybench's wheel and fetches every dependency once): one module-scoped bundle.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

PLAN = """
repeat = 2
[placement]
workers = [1, 2]
[[task]]
name = "sync"
kernel = "null"
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundle")
    # the suite runs against the installed package: the sources are this repository
    res = run_cli("bundle", str(d), "--source", str(ROOT),
                  timeout=800)
    if res.returncode != 0 and "Could not find a version" in res.stderr + res.stdout:
        pytest.skip(f"bundle needs the package index (network): {res.stderr[-300:]}")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "built portable (-march=x86-64-v2" in res.stdout, res.stdout
    return d


@pytest.fixture
def offline_ns():
    """A network namespace with only loopback: no route anywhere."""
    require_netns()
    name = f"mboff{os.getpid()}"[:15]
    subprocess.run([IP, "netns", "add", name], check=True, capture_output=True)
    subprocess.run([IP, "-n", name, "link", "set", "lo", "up"], check=True, capture_output=True)
    yield name
    subprocess.run([IP, "netns", "del", name], capture_output=True)


def _in_ns(ns: str, *cmd: str, **kw) -> subprocess.CompletedProcess:
    # a clean environment: no PYTHONPATH to the sources, no pip config or find-links of ours
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": kw.pop("home"),
           "PIP_CONFIG_FILE": os.devnull, "LANG": "C.UTF-8"}
    return subprocess.run([IP, "netns", "exec", ns, *cmd], capture_output=True, text=True,
                          env=env, timeout=600, stdin=subprocess.DEVNULL, **kw)


def test_bundle_installs_and_runs_with_no_network(wheels, offline_ns, tmp_path):
    names = sorted(p.name for p in wheels.iterdir())
    assert any(n.startswith("manybench-") and n.endswith(".whl") for n in names), names
    for dep in ("click", "distributed", "dask_jobqueue", "psutil", "jsonschema", "rich"):
        assert any(n.lower().startswith(dep + "-") for n in names), (dep, names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    home = str(tmp_path)
    # the namespace really has no way out
    probe = _in_ns(offline_ns, str(venv / "bin" / "python"), "-c",
                   "import socket; socket.create_connection(('1.1.1.1', 443), timeout=5)",
                   home=home)
    assert probe.returncode != 0 and "unreachable" in probe.stderr.lower(), probe.stderr
    # --no-compile: byte-compiling every dependency's modules was 14 of the install's 21
    # cpu-s and says nothing of the bundle (pip resolves and installs the whole set first)
    inst = _in_ns(offline_ns, str(venv / "bin" / "pip"), "install", "--no-index", "--no-compile",
                  "--find-links", str(wheels), "manybench", home=home)
    assert inst.returncode == 0, inst.stdout[-2000:] + inst.stderr[-2000:]
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    out = tmp_path / "res"
    run = _in_ns(offline_ns, str(venv / "bin" / "manybench"), "run", str(plan), "-o", str(out),
                 "-q", home=home, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    exp = _in_ns(offline_ns, str(venv / "bin" / "manybench"), "export", str(out), "--format",
                 "csv", home=home)
    assert exp.returncode == 0, exp.stderr
    assert len(exp.stdout.strip().splitlines()) == 1 + 2 * (1 + 2)   # header + records
    # the installed package, not the sources: its module lives in the venv
    where = _in_ns(offline_ns, str(venv / "bin" / "python"), "-c",
                   "import manybench, manybench._native; print(manybench.__file__)", home=home)
    assert where.returncode == 0 and str(venv) in where.stdout, where.stdout + where.stderr
    # portable by default: its C kernels were not built for the bundling machine's processor
    flags = _in_ns(offline_ns, str(venv / "bin" / "python"), "-c",
                   "from manybench import _native; print(_native.build_info()['cflags'])",
                   home=home)
    assert flags.returncode == 0 and "-march=x86-64-v2" in flags.stdout, flags.stdout


def test_bundle_refuses_a_directory_that_is_no_source_tree(tmp_path):
    res = run_cli("bundle", str(tmp_path / "out"), "--source", str(tmp_path))
    assert res.returncode == 2
    assert "not a manybench source tree" in res.stderr and "Traceback" not in res.stderr


def test_requirements_for_another_target_come_from_the_wheel(wheels):
    """For a foreign target the dependencies are read from manybench's wheel: its runtime
    requirements, an extra's only when asked for."""
    from manybench.bundle import _requirements
    plain = _requirements(wheels, ())
    assert any(r.startswith("click") for r in plain)
    assert any(r.startswith("dask-jobqueue") or r.startswith("dask_jobqueue") for r in plain)
    assert not any(r.startswith("pytest") for r in plain)
    assert any(r.startswith("pytest") for r in _requirements(wheels, ("test",)))
