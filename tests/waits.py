"""Waiting on events, never on a sleep long enough "usually": a test that needs a phase under
way, a file present or a process started polls for that, with a bound only a hang reaches (a
busy machine, load 10 on 2 cpus, takes many times the idle time; it must not fail a test)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from typing import Callable, TypeVar

import psutil

# A bound on any one event: past it the test is stuck, not slow. Under the suite's per-test
# timeout (pyproject's 120 s) so that a hang fails saying what it waited for.
HANG_S = 90.0
# How long processes killed are given to be gone (torn down by the kernel, reaped): one left
# behind never goes by itself, so only a leftover reaches it.
LEFTOVER_S = 30.0

T = TypeVar("T")


def wait_for(cond: Callable[[], T], what: str, timeout: float = HANG_S,
             proc: subprocess.Popen | None = None, every: float = 0.05,
             detail: Callable[[], object] = lambda: "") -> T:
    """cond()'s first true answer, polled; fails naming `what` (and detail(), what was found
    instead) past the bound, or at once when `proc` (the run the event belongs to) ended
    first."""
    end = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            said = proc.stderr.read()[-3000:] if proc.stderr else ""
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what} "
                                 f"{detail()}\n{said}")
        if time.monotonic() > end:
            raise AssertionError(f"no {what} in {timeout:.0f} s {detail()}")
        time.sleep(every)


def phases_stored(out_dir: str) -> int:
    """How many phases the run in out_dir has stored (one transaction each), 0 before its
    database is made."""
    try:
        db = sqlite3.connect(f"file:{os.path.join(out_dir, 'results.db')}?mode=ro", uri=True)
        try:
            return db.execute("SELECT COUNT(*) FROM phases").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def wait_phases(out_dir: str, n: int, proc: subprocess.Popen | None = None,
                timeout: float = HANG_S) -> None:
    """Until the run in out_dir has stored n phases."""
    wait_for(lambda: phases_stored(out_dir) >= n, f"{n} phases stored", timeout, proc)


def descendant(root: int, argv: list[str]) -> psutil.Process | None:
    """A process under `root` (its children, theirs, ...) running exactly argv."""
    try:
        below = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return None
    for p in below:
        try:
            if p.cmdline() == argv:
                return p
        except psutil.Error:
            pass
    return None


def wait_descendant(root: int, argv: list[str], proc: subprocess.Popen | None = None,
                    timeout: float = HANG_S) -> psutil.Process:
    """Until a process under `root` runs argv (a task's command started: its phase is under
    way on that node)."""
    return wait_for(lambda: descendant(root, argv), f"{argv} under pid {root}", timeout, proc)


def wait_workers(scheduler: str, n: int, security=None, timeout: float = HANG_S) -> None:
    """Until n workers have registered with the Dask scheduler at `scheduler` (a worker sets up
    its plugins, manybench's agent among them, before it registers: distributed's
    Worker.start_unsafe)."""
    from distributed import Client
    with Client(scheduler, timeout="60s", security=security) as c:
        c.wait_for_workers(n, timeout=timeout)
