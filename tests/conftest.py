"""Shared helpers: run the real command line in a subprocess, write plans to temp files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import fastpass

pytest_plugins = ["pytester"]     # test_require.py tests the hook below in a child pytest

# MANYBENCH_REQUIRE=all (set by .ci/run): a test that skips because something it needs is
# missing (the native build, netns, Slurm, faketime, fio, ...) fails instead, so a CI run
# cannot go green having tested less. A comma-separated list of words requires only the
# components whose skip reasons name them (MANYBENCH_REQUIRE=slurm,netns).
REQUIRE = os.environ.get("MANYBENCH_REQUIRE", "").strip()


def _required(reason: str) -> bool:
    words = [w.strip().lower() for w in REQUIRE.split(",") if w.strip()]
    return "all" in words or any(w in reason.lower() for w in words)


def _skip_reason(rep: pytest.TestReport | pytest.CollectReport) -> str | None:
    """The reason of a skip that MANYBENCH_REQUIRE makes a failure, else None."""
    if not (REQUIRE and rep.skipped) or hasattr(rep, "wasxfail"):   # an xfail is no skip
        return None
    if not isinstance(rep.longrepr, tuple):
        return None
    reason = str(rep.longrepr[2]).removeprefix("Skipped: ")
    return reason if _required(reason) else None


def _message(reason: str) -> str:
    return f"MANYBENCH_REQUIRE={REQUIRE}: required but skipped: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    rep = outcome.get_result()
    reason = _skip_reason(rep)
    if reason is not None:
        rep.outcome = "failed"
        rep.longrepr = _message(reason)
        # a skipif mark or a skipping fixture skips in setup, and a failed setup would be
        # reported as ERROR: it is a test that did not run, so FAILED like the others
        if rep.when == "setup":
            rep.when = "call"


class _SkippedModule(pytest.Item):
    """Stands in for a module skipped while being collected (a module-level importorskip,
    as the native-kernel modules do): a collection skip never reaches the hook above."""

    def __init__(self, *, reason: str, **kw) -> None:
        super().__init__(**kw)
        self.reason = reason

    def runtest(self) -> None:
        raise RuntimeError(self.reason)

    def repr_failure(self, excinfo: pytest.ExceptionInfo, style=None) -> str:
        return _message(self.reason)      # worded as a skipped test's failure is

    def reportinfo(self) -> tuple:
        return self.path, None, f"{self.parent.name} (skipped at collection)"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    outcome = yield
    rep = outcome.get_result()
    reason = _skip_reason(rep)
    if reason is not None:
        # one failing item in the module's place; the rest of the suite still runs (a
        # failed collect report would stop the whole session before any test)
        item = _SkippedModule.from_parent(collector, name="MANYBENCH_REQUIRE", reason=reason)
        outcome.force_result(pytest.CollectReport(rep.nodeid, "passed", None, [item],
                                                  sections=rep.sections))

# The everyday pass is `pytest -m "not e2e"`: a test that goes through the real command line or
# starts a cluster while not marked e2e fails (tests/fastpass.py), so that pass stays fast.
fastpass.install()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    fastpass.current = item
    try:
        yield
    finally:
        fastpass.current = None


# The suite runs on several pytest-xdist workers (scripts/test.sh: -n N --dist loadgroup). A test
# that uses a daemon a session fixture starts once per process (Slurm, Grid Engine) must run on
# the one worker that started it: every such test joins that fixture's xdist group. Other tests
# that must not overlap one another say so themselves with @pytest.mark.xdist_group("<name>").
FIXTURE_GROUPS = {"slurm": "slurm", "sge": "gridengine"}


@pytest.hookimpl(tryfirst=True)      # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, group in FIXTURE_GROUPS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))


# Children run in other directories (batch jobs, SSH logins): a relative import path from
# the developer's shell (PYTHONPATH=src) must still find the package there.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    fastpass.require_e2e("runs the command line in a subprocess (run_cli)")
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
