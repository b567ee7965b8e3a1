"""Waiting for, reaping and tying the lives of the node's own child processes."""
from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import time

PR_SET_PDEATHSIG = 1


def pause(seconds: float) -> None:
    """Sleep without clock_nanosleep: libfaketime (used to shift a test node's clock) makes
    Python's time.sleep fail with EINVAL, so node-side code waits with select instead."""
    select.select([], [], [], max(0.0, seconds))


def open_files(want: int) -> None:
    """Raise this process's open-file limit to `want`, up to the hard limit: 1,000 nodes
    reached at once need more than the usual 1,024 descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        limit = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, limit), hard))


def wait_child(pid: int, timeout: float) -> int | None:
    """Wait up to `timeout` s for our child `pid`; its wait status, or None if still running."""
    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= end:
            return None
        pause(0.005)


def reap(pid: int, grace: float) -> int | None:
    """Wait up to `grace` seconds for our own child `pid`, then SIGKILL it; its wait status."""
    try:
        status = wait_child(pid, grace)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            status = os.waitpid(pid, 0)[1]
        return status
    except (ProcessLookupError, ChildProcessError):
        return None


def exit_text(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Have the kernel send `sig` to this process when its parent dies, even by SIGKILL."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass
