"""Nothing a run started outlives a coordinator killed with SIGKILL on the local engine by
more than a few seconds (issue 18, item 3): its slots die with it (a parent-death signal)
and take their commands' processes with them, the background children of a command that
already exited included, cgroup or not."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from builders import survivors, tagged
from manybench.node.reaper import SlotCgroup, cgroup2_dir

pytestmark = pytest.mark.e2e   # runs of the command line, killed

# the command exits at once, leaving a background child behind: the window in which the
# slot has reaped the command but not yet its orphan is where one used to escape
COMMAND = 'sleep 0.{n}; (sleep 300 &); echo done'


def _plan(tmp_path, tag: str) -> str:
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
        repeat = 400
        [placement]
        workers = 2
        [[task]]
        name = "orphans"
        command = ["sh", "-c", "{COMMAND.format(n='{n}')}"]
        n = ["0", "05", "1"]
        env = {{ MB_ORPHAN_TAG = "{tag}" }}
        """.replace("\n        ", "\n"))
    return str(plan)


@pytest.mark.parametrize("cgroup", ["1", "0"])
def test_nothing_outlives_a_coordinator_killed_with_sigkill(tmp_path, cgroup):
    tag = uuid.uuid4().hex
    plan = _plan(tmp_path, tag)
    env = {**os.environ, "MANYBENCH_CGROUP": cgroup}
    left = []
    try:
        for i, delay in enumerate((1.5, 2.2, 2.9, 3.6, 4.3)):
            proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o",
                                     str(tmp_path / f"out{i}"), "-q"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            assert proc.poll() is None, "the run ended before it was killed"
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        left = survivors(tag)
        assert not left, [(p.pid, p.cmdline()) for p in left]
    finally:
        for p in tagged(tag):       # the test's own strays, by pid
            try:
                p.kill()
            except psutil.Error:
                pass


# A slot between its command's exit and the phase's cleanup: the command is reaped, its
# background child is not yet killed. SIGTERM there (its agent's death) must take the child.
SLOT_SCRIPT = r"""
import os, sys, time
from manybench import _native
from manybench.kernels import KERNELS, SlotContext
from manybench.model import TaskSpec
from manybench.node.reaper import SlotCgroup, become_subreaper
from manybench.node.slot import arm_term_handler
d, tag, cgroup = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
become_subreaper()
cg = SlotCgroup("manybench-test-" + tag) if cgroup else None
if cg is not None:
    assert cg.path, "no cgroup v2 here"
    cg.join()
arm_term_handler(cg.path if cg is not None else None)
# in a cgroup, a setsid orphan (out of the command's group) too
orphan = "(setsid sleep 300 &)" if cgroup else "(sleep 300 &)"
spec = TaskSpec("c", "command", {}, command=["sh", "-c", orphan + "; echo done"],
                env={"MB_ORPHAN_TAG": tag})
ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1, scratch=d,
                  shared=d, spec=spec, kernel="command")
k = KERNELS["command"]
st = k.prepare(ctx, {})
res = k.run(st, time.time_ns(), 0)
k.cleanup(st)
print("ran", res.status, flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("cgroup", ["1", "0"])
def test_a_slot_killed_after_its_command_exited_takes_the_commands_orphans(tmp_path, cgroup):
    tag = uuid.uuid4().hex
    proc = subprocess.Popen([sys.executable, "-c", SLOT_SCRIPT, str(tmp_path), tag, cgroup],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().split() == ["ran", "ok"]
        assert [p for p in tagged(tag) if p.status() != psutil.STATUS_ZOMBIE], \
            "the command left no background child: the test tests nothing"
        proc.send_signal(signal.SIGTERM)    # what a slot gets when its agent dies
        proc.wait()
        left = survivors(tag)
        assert not left, [(p.pid, p.cmdline()) for p in left]
    finally:
        proc.kill()
        proc.wait()
        for p in tagged(tag):
            try:
                p.kill()
            except psutil.Error:
                pass
        base = cgroup2_dir()
        if base and os.path.isdir(os.path.join(base, f"manybench-test-{tag}")):
            SlotCgroup.at(os.path.join(base, f"manybench-test-{tag}")).remove()
