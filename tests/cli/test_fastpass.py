"""The everyday pass (`pytest -m "not e2e"`) stays fast: a test that goes through the command
line or a real component unmarked fails; test modules share builders, not one another."""
from __future__ import annotations

import ast
import os
import sys

from fastpass import spawn_reason
from suite_paths import TESTS

HERE = str(TESTS)

CHILD = """
import subprocess
import sys

import pytest

import fastpass
from conftest import run_cli


def test_unmarked_cli():
    run_cli("--version")


def test_unmarked_spawn():
    subprocess.run([sys.executable, "-m", "manybench", "--version"])


def test_unmarked_batch_job():
    subprocess.run(["sbatch", "--wrap", "true"])


def test_unmarked_fixture(lab):
    pass


@pytest.fixture
def lab():
    fastpass.require_e2e("starts a cluster")


def test_unmarked_version_question_and_plain_programs():
    subprocess.run(["fio", "--version"], capture_output=True)     # absent or not: no run
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0


@pytest.mark.e2e
def test_marked(lab):
    # spawns for real: an absent module is python's exit 1, not the guard's failure
    assert subprocess.run([sys.executable, "-m", "manybench.no_such_module"],
                          capture_output=True).returncode == 1
"""


def test_what_makes_a_test_end_to_end():
    assert spawn_reason([sys.executable, "-m", "manybench", "run", "p.toml"]) == \
        "starts `python -m manybench`"
    assert spawn_reason(["sh", "-c", "python3 -m manybench.node.server --port 1"]) == \
        "starts `python -m manybench.node.server`"
    assert spawn_reason(["/usr/bin/sbatch", "--wait", "job.sh"]).endswith("(sbatch)")
    assert spawn_reason(["fio", "--name=x", "--size=1M"]) == "runs fio"
    assert spawn_reason("chromium --headless x.html") == "runs chromium"
    for quick in (["fio", "--version"], [sys.executable, "-m", "manybenchx"],
                  [sys.executable, "-m", "pytest"], ["sh", "-c", "true"]):
        assert spawn_reason(quick) is None, quick


def test_an_unmarked_test_through_a_real_component_fails_naming_the_mark(pytester):
    with open(os.path.join(HERE, "conftest.py")) as f:
        pytester.makeconftest(f.read())
    with open(os.path.join(HERE, "fastpass.py")) as f:
        pytester.makepyfile(fastpass=f.read())
    pytester.makepyfile(test_child=CHILD)
    pytester.makeini("[pytest]\nmarkers = e2e: end to end\n")
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    res.assert_outcomes(passed=2, failed=3, errors=1)
    out = res.stdout.str()
    for test, why in [("test_unmarked_cli", "runs the command line in a subprocess (run_cli)"),
                      ("test_unmarked_spawn", "starts `python -m manybench`"),
                      ("test_unmarked_batch_job", "submits to a batch scheduler (sbatch)"),
                      ("test_unmarked_fixture", "starts a cluster")]:
        assert f"test_child.py::{test} {why}, so it is an end-to-end test: mark it " \
               "@pytest.mark.e2e" in out, (test, out)
    # -m "not e2e" runs the rest: the marked test is left out, nothing else
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not e2e")
    res.assert_outcomes(passed=1, failed=3, errors=1, deselected=1)


def _imported_modules(path: str) -> set[str]:
    tree = ast.parse(open(path).read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
    return found


def test_no_test_module_imports_another():
    """Shared builders live in tests/builders.py (or conftest.py): importing a test module
    from another one runs the first one's module-level code and ties the two together."""
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        imported = {m for m in _imported_modules(str(path)) if m.startswith("test_")}
        if imported:
            offenders[str(path.relative_to(TESTS))] = sorted(imported)
    assert offenders == {}

