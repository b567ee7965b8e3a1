"""A variant's wrap on both engines (issue 16, items 1 and 2): a wrapped phase's wrap is
launched and up before its T0; a wrapped command keeps its kernel's traits, so nothing it
started (setsid children too) is alive in the next phase and a slot killed mid-phase takes
its wrapped child with it. And a Dask node of another manybench is refused by name (item 3)."""
from __future__ import annotations

import sys
import uuid

import psutil
import pytest

from builders import ORPHAN_TAG, survivors, tagged
from cluster_lab import DaskLab
from conftest import export_json, run_cli
from manybench.node.protocol import PROTOCOL_VERSION

# the Dask lab is a module fixture asked for by name (request.getfixturevalue), which the
# conftest's grouping cannot see: the module's tests share one worker and so one lab
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("module:test_wrap_engines")]

pytest.importorskip("manybench._native", reason="the C kernels are not built")

ENGINES = ["local", "dask"]

# counts the processes still carrying a tag, zombies aside (a command of the next phase)
COUNT = f"""import sys, psutil
n = 0
for p in psutil.process_iter():
    try:
        if p.environ().get("{ORPHAN_TAG}") == sys.argv[1] and p.status() != psutil.STATUS_ZOMBIE:
            n += 1
    except psutil.Error:
        pass
print("alive", n)
"""


@pytest.fixture(scope="module")
def dask_lab():
    """Two namespace nodes of one slot each, without slot cgroups: the agent's own
    bookkeeping of a slot's child is what stops it when the slot dies."""
    with DaskLab(2, slots=1, env={"MANYBENCH_CGROUP": "0"}) as lab:
        yield lab


@pytest.fixture(params=ENGINES)
def engine(request) -> list[str]:
    """The `run` arguments that choose the engine."""
    if request.param == "local":
        return []
    return ["--scheduler", request.getfixturevalue("dask_lab").scheduler]


def test_a_wrapped_phase_has_its_wrap_up_before_t0(engine, plan_file, tmp_path):
    """null's prepare would travel with the go, but a wrap is started in a prepare round of
    its own: each launch stamps `up` after its 0.3 s start-up, and every phase's wraps (and
    those of the phases before it) are up by that phase's T0."""
    plan = plan_file("""
        repeat = 3
        [placement]
        workers = 2
        [[task]]
        name = "sync"
        kernel = "null"
        [[variant]]
        name = "slow-wrap"
        wrap = ["sh", "-c", "sleep 0.3; date +%s%N >> {tmp}/up; exec \\"$@\\"", "sh"]
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q", *engine, timeout=300)
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out)
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows), rows
    up = [int(x) for x in (tmp_path / "up").read_text().split()]
    assert len(up) == 6
    for t0 in sorted({r["t0_ns"] for r in rows}):
        assert sum(u < t0 for u in up) >= sum(r["t0_ns"] <= t0 for r in rows), (t0, up)


def _leftover_plan(plan_file, tmp_path, tag: str, command: str, extra: str = "") -> str:
    (tmp_path / "count.py").write_text(COUNT)
    return plan_file(f"""
        repeat = 2
        [[task]]
        name = "first"
        command = ["sh", "-c", "{command}"]
        env = {{ {ORPHAN_TAG} = "{tag}" }}
        {extra}
        [[task]]
        name = "count"
        command = ["{sys.executable}", "{{tmp}}/count.py", "{tag}"]
        metrics.alive = 'alive (?P<value>\\d+)'
        [[variant]]
        name = "wrapped"
        wrap = ["env", "--"]
    """)


def _nothing_left(engine: list[str], plan: str, tmp_path, tag: str, status: str) -> None:
    out = str(tmp_path / "res")
    try:
        res = run_cli("run", plan, "-o", out, "-q", *engine, timeout=300)
        assert "Traceback" not in res.stderr, res.stderr
        rows = export_json(out)
        assert {r["status"] for r in rows if r["task"] == "first"} == {status}, rows
        # the count ran after each first phase: nothing of it was alive any more
        assert [r["metrics"].get("alive") for r in rows if r["task"] == "count"] == [0, 0]
        left = survivors(tag)
        assert not left, [(p.pid, p.cmdline()) for p in left]
    finally:
        for p in tagged(tag):       # the test's own strays, by pid
            try:
                p.kill()
            except psutil.Error:
                pass


@pytest.mark.parametrize("command, status, extra", [
    ("sleep 300 & echo hi", "ok", ""),                       # a background child
    ("setsid sleep 300 & sleep 30", "timeout", "timeout = 0.5"),   # out of its group
])
def test_no_child_of_a_wrapped_command_is_alive_in_the_next_phase(engine, plan_file, tmp_path,
                                                                   command, status, extra):
    tag = uuid.uuid4().hex
    plan = _leftover_plan(plan_file, tmp_path, tag, command, extra)
    _nothing_left(engine, plan, tmp_path, tag, status)


@pytest.mark.parametrize("on, cgroup", [("local", "1"), ("local", "0"), ("dask", "0")])
def test_a_slot_killed_mid_phase_takes_its_wrapped_child_with_it(on, cgroup, request,
                                                                 plan_file, tmp_path,
                                                                 monkeypatch):
    """The wrapped command kills its slot (its parent, through `env`) and waits; its child
    must die with the slot: by the slot's cgroup, else by the process group the agent knows
    (the Dask lab's nodes run without cgroups)."""
    monkeypatch.setenv("MANYBENCH_CGROUP", cgroup)
    engine = [] if on == "local" else ["--scheduler",
                                       request.getfixturevalue("dask_lab").scheduler]
    tag = uuid.uuid4().hex
    plan = _leftover_plan(plan_file, tmp_path, tag, "sleep 300 & kill -9 $PPID; wait")
    _nothing_left(engine, plan, tmp_path, tag, "error")


# a worker of another manybench: its protocol version is not this one
OTHER = ["-c", "import sys, manybench.node.protocol as p; p.PROTOCOL_VERSION = int("
               f"{PROTOCOL_VERSION + 1}); from manybench.entry import main; main()"]


def test_a_dask_node_of_another_version_is_refused_naming_both(plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "sync"
        kernel = "null"
    """)
    with DaskLab(2, slots=1, python={2: [sys.executable, *OTHER]}) as lab:
        res = run_cli("run", plan, "-o", str(tmp_path / "res"), "--scheduler", lab.scheduler,
                      timeout=300)
    assert res.returncode == 2, res.stderr + res.stdout
    assert "Traceback" not in res.stderr
    assert (f"speaks manybench protocol version {PROTOCOL_VERSION + 1}; this side speaks "
            f"version {PROTOCOL_VERSION}: install the same manybench") in res.stderr, res.stderr
