"""Is a run still running? Its row says `running` until its coordinator ends it; a killed
coordinator never does. So the row keeps the coordinator's pid, host and process start time,
and a heartbeat the coordinator renews (run/heartbeat.py); a reader that finds the process
gone (same host: the pid is not there, or is another process) or the heartbeat stale says
`killed`. Runs stored before these notes existed stay `running` (nothing tells). How old is
stale is the coordinator's (its heartbeat.stale, in the notes): a reader's own configuration
could call a live run with a slower heartbeat killed.
"""
from __future__ import annotations

import socket
import time

import psutil

from ..config import timing
from .contract import RunInfo, RunStatus

START_SLACK_S = 1.0           # process start times are rounded to clock ticks


def this_host() -> str:
    return socket.gethostname()


def process_started(pid: int) -> float:
    """The process's start time (epoch s), 0.0 when it is not there."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0


def alive_here(pid: int, started: float) -> bool:
    """The process `pid` of this host is the one that started at `started`."""
    now = process_started(pid)
    return bool(now) and abs(now - started) < START_SLACK_S


def status_of(info: RunInfo, now_ns: int | None = None) -> str:
    """The run's status as a reader should tell it: `killed` for a `running` row whose
    coordinator is gone."""
    if info.status != RunStatus.RUNNING:
        return info.status
    n = info.notes
    if n.pid and n.host == this_host() and not alive_here(n.pid, n.pid_started):
        return RunStatus.KILLED
    now_ns = time.time_ns() if now_ns is None else now_ns
    stale_s = n.heartbeat_stale_s or timing("heartbeat.stale")
    if n.heartbeat_ns and now_ns - n.heartbeat_ns > stale_s * 1e9:
        return RunStatus.KILLED
    return RunStatus.RUNNING
