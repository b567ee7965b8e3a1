"""Shared helpers: run the real command line in a subprocess, write plans to temp files."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib

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


# The suite runs on several pytest-xdist workers (scripts/test.sh: -n N --dist loadgroup); each
# worker is a process of its own, and the tests of one xdist group all run on one worker, one
# after another. Tests join a group here when running apart would break or waste them:
# - a test of a daemon that a session fixture starts once per process (Slurm, Grid Engine)
#   runs on the one worker that started it;
# - the tests of a module with a module-scoped fixture (a Dask lab, a bundle, a built MPI
#   program) run on one worker, so the fixture is set up once, not once per worker.
# Any other test that must not overlap another says so: @pytest.mark.xdist_group("<name>")
# on both (docs/architecture.md, "Tests").
FIXTURE_GROUPS = {"slurm": "slurm", "sge": "gridengine"}


def _group(item: pytest.Item) -> str | None:
    """The xdist group this test joins for the reasons above, or None. One group only: xdist
    names a test of two groups by both, a third group that neither worker runs."""
    names = getattr(item, "fixturenames", ())
    for fixture, group in FIXTURE_GROUPS.items():
        if fixture in names:
            return group
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d.scope in ("module", "package") for ds in defs for d in ds):
        return f"module:{item.module.__name__}" if item.module else item.nodeid
    return None


def _heavy_first(item: pytest.Item) -> int:
    """Slow tests, then those that ask for a longer timeout than the suite's, then the other
    end-to-end ones are handed out first; the many quick ones fill in at the end, so no
    worker starts a minute-long test while the others have run dry."""
    if item.get_closest_marker("slow"):
        return 0
    long = item.get_closest_marker("timeout")
    if long and long.args and long.args[0] > float(item.config.getini("timeout") or 0):
        return 1
    return 2 if item.get_closest_marker("e2e") else 3


# MANYBENCH_ALONE (scripts/test.sh sets it): "skip" leaves out the tests marked `alone`
# (the parallel pass), "only" keeps only them (run after it, in one process); unset, all run.
ALONE = os.environ.get("MANYBENCH_ALONE", "")


def _select_alone(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ALONE not in ("skip", "only"):
        return
    keep, drop = [], []
    for item in items:
        marked = item.get_closest_marker("alone") is not None
        (keep if marked == (ALONE == "only") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    if ALONE == "skip" and drop and os.environ.get("MANYBENCH_ALONE_FILES"):
        _write_alone_files(os.environ["MANYBENCH_ALONE_FILES"], drop)


def _write_alone_files(path: str, alone: list[pytest.Item]) -> None:
    """The files that hold the tests this pass left out, one a line: scripts/test.sh's
    second pass collects only those (collecting all ~130 modules again took ~5.6 cpu-s for
    its 14 tests). Each xdist worker writes the same list, whole, by a rename; added to what
    is there, never less: a child pytest of a test (test_require.py) loads this conftest with
    the same environment and has its own few files."""
    files = {str(item.path) for item in alone}
    try:
        with open(path) as f:
            files.update(line.strip() for line in f if line.strip())
    except OSError:
        pass
    files = sorted(files)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("".join(line + "\n" for line in files))
    os.replace(tmp, path)


# a wrapper, marking before any plain hook runs: xdist's own names each test by its groups
# there, and a tryfirst hook in a conftest did not reliably come before it
@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    _select_alone(config, items)
    for item in items:
        group = _group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    if config.getoption("numprocesses", None):     # serially, the order stays the files'
        items.sort(key=_heavy_first)               # stable: each module's tests stay together
    result = yield
    if getattr(config.option, "loadgroup", False):    # set on a worker of --dist loadgroup
        _name_by_group(items)
    return result


def _name_by_group(items: list[pytest.Item]) -> None:
    """xdist's loadgroup scheduler reads a test's group from its id ("...@group"), which
    xdist 3.8 sets through item._nodeid; pytest 9 reads the id from item._id, so the groups
    were silently lost (every test went to any worker). Set it where pytest 9 reads it."""
    from _pytest.nodeid import NodeId
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


# Children run in other directories (batch jobs, SSH logins): a relative import path from
# the developer's shell (PYTHONPATH=src) must still find the package there.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)


# Every run first measures each node's noise floor (the plan's `noise`, default 0.4 s on all
# cpus at once, once per machine and cpus): ~0.35 s and 0.3 cpu-s of each of
# the suite's hundreds of runs, most of them about something else. The suite's runs measure
# it for its minimum, 10 ms: the measurement, its record, its report line and its warning
# are still made on every run. A plan that sets `noise`, or a --set of it, is left alone, and
# a test of the default says run_cli(..., default_noise=True).
SUITE_NOISE = "0.01s"


def _noise_args(args: tuple[str, ...], cwd: str | None) -> list[str]:
    # a resume must repeat the run's own --set, which this cannot know
    if len(args) < 2 or args[0] != "run" or "--resume" in args or \
            any(a.startswith("noise=") for a in args):
        return []
    plan = os.path.join(cwd or "", args[1])
    try:
        with open(plan, "rb") as f:
            if "noise" in tomllib.load(f):
                return []
    except (OSError, ValueError):     # no plan file, or one that is no TOML: left as it is
        return []
    return ["--set", f"noise={SUITE_NOISE}"]


def run_cli(*args: str, timeout: float = 120, default_noise: bool = False,
            **kw) -> subprocess.CompletedProcess:
    fastpass.require_e2e("runs the command line in a subprocess (run_cli)")
    noise = [] if default_noise else _noise_args(args, kw.get("cwd"))
    return subprocess.run([sys.executable, "-m", "manybench", *args, *noise],
                          capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture
def plan_file(tmp_path):
    """Write a plan (dedented TOML) and return its path; {tmp} is replaced by tmp_path."""
    def write(text: str, name: str = "plan.toml") -> str:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).replace("{tmp}", str(tmp_path)))
        return str(p)
    return write


def free_port() -> int:
    """A loopback port free now (for a scheduler the test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SCHEDULER_UP_S = 180.0     # a bound on a scheduler's start (20 s seen at a load of 60 on 2 cpus)


def loopback_scheduler(*args: str) -> tuple[str, subprocess.Popen]:
    """`manybench scheduler` on a loopback port of its own choosing, secured with the session's
    credentials (args: --insecure, or --credentials DIR, say), listening: (its address, its
    process). Its log is the file named by the process's `log` (stop() removes it).

    Not on a port found free first (free_port): the scheduler binds it a second or more later,
    and meanwhile any process that binds a port may get it (a 1,000-node simulated cluster in
    another test binds ~2,000: such a burst took the port found free in 26 of 200 tries here);
    the scheduler then failed unseen and its worker reached the port's new owner ("Worker
    failed to start" 2 s after its start, test_worker_log in the parallel pass)."""
    fd, log = tempfile.mkstemp(prefix="mb-scheduler-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "scheduler", "--host",
                                 "127.0.0.1", "--port", "0", *args], stderr=f)
    proc.log = log
    end = time.monotonic() + SCHEDULER_UP_S
    while True:
        with open(log) as f:
            text = f.read()
        up = re.search(r"^Scheduler at: (\S+)$", text, re.M)    # said once it listens
        if up:
            return up[1], proc
        if proc.poll() is not None or time.monotonic() > end:
            stop([proc])
            raise AssertionError(f"the scheduler did not start:\n{text[-4000:]}")
        time.sleep(0.1)


def client_security():
    """The Security a test's own Dask client needs for the session's clusters."""
    from manybench.security.credentials import default_dir, load
    return load(default_dir()).security()


@pytest.fixture(scope="session", autouse=True)
def cluster_credentials(tmp_path_factory) -> str:
    """Every cluster a test starts is secured as users' are: with the credentials
    `manybench cluster-credentials` makes, where every manybench command (and the
    namespace nodes' workers, which inherit the environment) finds them."""
    from manybench.security.credentials import make
    where = tmp_path_factory.mktemp("credentials") / "cluster"
    make(str(where))
    os.environ["MANYBENCH_CREDENTIALS"] = str(where)
    return str(where)


def stop(procs: list[subprocess.Popen]) -> None:
    """End processes this test started (by pid): SIGTERM, 15 s, then SIGKILL; a
    loopback_scheduler's log goes with it."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if getattr(p, "log", None):
            os.unlink(p.log)
            p.log = None


def export_json(directory: str) -> list[dict]:
    out = run_cli("export", directory, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def cli():
    return run_cli
