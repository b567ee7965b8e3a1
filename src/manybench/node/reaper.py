"""Nothing a command starts outlives its phase, nor a killed slot.

Three layers, each catching what the one before misses:
  process group  a command runs in its own group; a timeout kills the group (command.py)
  subreaper      the slot is a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant
                 orphaned by its parent's exit (`sleep 300 &`, a `setsid` grandchild) is
                 re-parented to the slot instead of init, so after each command phase the
                 slot kills every descendant it still has (kill_descendants)
  cgroup         where cgroup v2 is writable, each slot runs in a cgroup of its own
                 (SlotCgroup): when a slot dies or the run ends, the agent kills the whole
                 cgroup, which holds the slot's command even after the slot was SIGKILLed.
                 Without one (MANYBENCH_CGROUP=0 declines them) the agent kills at least
                 the dead slot's command's process group (kill_group)
"""
from __future__ import annotations

import ctypes
import os
import signal
import time

import psutil

PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 20       # killing a process may orphan its own children onto us: go again


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants; False where the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_descendants() -> int:
    """SIGKILL every descendant of this process and reap those that become its children;
    how many were killed."""
    if not _has_children():   # the common case, in microseconds: a subreaper with no
        return 0              # children has no descendants left at all
    me = psutil.Process()
    killed = 0
    for _ in range(KILL_ROUNDS):
        try:
            kids = me.children(recursive=True)
        except psutil.Error:
            break
        if not kids:
            break
        for k in kids:
            try:
                k.kill()
                killed += 1
            except psutil.Error:
                pass
        _reap_children()
    return killed


def _has_children() -> bool:
    """Reap exited children; True when some are still alive."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _reap_children() -> None:
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:   # children left, not yet dead: SIGKILL is quick, wait a little
            time.sleep(0.002)
            try:
                if not psutil.Process().children():
                    return
            except psutil.Error:
                return


def kill_group(pgid: int) -> None:
    """SIGKILL a process group (a dead slot's command, where no cgroup held the slot)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def cgroup2_dir() -> str | None:
    """This process's cgroup v2 directory, when cgroup v2 is mounted and not declined
    (MANYBENCH_CGROUP=0); else None."""
    if os.environ.get("MANYBENCH_CGROUP", "1") == "0":
        return None
    try:
        with open("/proc/self/cgroup") as f:
            own = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
        with open("/proc/self/mounts") as f:
            mount = next((line.split()[1] for line in f if line.split()[2:3] == ["cgroup2"]),
                         None)
    except OSError:
        return None
    if own is None or mount is None:
        return None
    path = os.path.join(mount, own.lstrip("/"))
    return path if os.path.isdir(path) else None


CGROUP_PREFIX = "manybench-"   # manybench-<agent pid>-slot<i>-<n>


def cgroup_name(agent_pid: int, slot: int, n: int) -> str:
    return f"{CGROUP_PREFIX}{agent_pid}-slot{slot}-{n}"


def sweep_stale() -> list[str]:
    """Remove the slot cgroups of agents that are gone (a coordinator or agent killed with
    SIGKILL could not), killing what they still hold: it was started by their slots.
    Returns the cgroups removed."""
    base = cgroup2_dir()
    if base is None:
        return []
    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return []
    for name in names:
        if not name.startswith(CGROUP_PREFIX):
            continue
        pid = name[len(CGROUP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or psutil.pid_exists(int(pid)):
            continue
        cg = SlotCgroup.at(os.path.join(base, name))
        cg.remove(grace=0.5)
        if not os.path.isdir(os.path.join(base, name)):
            removed.append(name)
    return removed


class SlotCgroup:
    """One slot's cgroup v2 (best effort: `path` is None where none can be made)."""

    def __init__(self, name: str) -> None:
        self.path: str | None = None
        base = cgroup2_dir()
        if base is None:
            return
        path = os.path.join(base, name)
        try:
            os.makedirs(path, exist_ok=True)
            self.path = path
        except OSError:
            pass

    @classmethod
    def at(cls, path: str) -> SlotCgroup:
        """An existing cgroup, by its path."""
        cg = cls.__new__(cls)
        cg.path = path
        return cg

    def join(self) -> None:
        """Move the calling process (the freshly forked slot) into the cgroup."""
        if self.path is None:
            return
        try:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write("0")
        except OSError:
            pass

    def kill(self) -> None:
        """SIGKILL everything in the cgroup (cgroup.kill, else each pid it lists)."""
        if self.path is None:
            return
        try:
            with open(os.path.join(self.path, "cgroup.kill"), "w") as f:
                f.write("1")
            return
        except OSError:
            pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def pids(self) -> list[int]:
        if self.path is None:
            return []
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def remove(self, grace: float = 2.0) -> None:
        """Kill what is left and remove the cgroup once it is empty."""
        if self.path is None:
            return
        self.kill()
        end = time.monotonic() + grace
        while True:
            try:
                os.rmdir(self.path)
                break
            except OSError:
                if time.monotonic() > end:
                    break
                time.sleep(0.01)
        self.path = None
