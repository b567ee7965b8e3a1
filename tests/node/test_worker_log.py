"""What a `manybench worker` tells in its log: an idle worker logs no stall.

Its event loop checks itself every 5 s, not every 20 ms (node/worker.py), so Dask's stall
alarm (ticks more than 3 s apart) fired at every tick of every worker: "Event loop was
unresponsive in Worker for 5.00s", twice per 5 s on two nodes, which was taken for the cause
of a failure it had nothing to do with."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

import conftest
from conftest import loopback_scheduler, stop

pytestmark = pytest.mark.e2e   # a real Dask scheduler and worker

JOIN_S = 120.0      # a bound on a worker's start and registration (a loaded machine: tens of s)


def _why(log, sched: subprocess.Popen) -> str:
    """What the worker and its scheduler said: the worker's failure names its cause before
    Dask's "Worker failed to start" (a traceback's last 2,000 characters did not)."""
    said = "(its log is not kept)"
    if getattr(sched, "log", None):
        with open(sched.log) as f:
            said = f.read()[-3000:]
    return f"worker:\n{log.read_text()[-8000:]}\nscheduler:\n{said}"


def _joined(log, procs: list[subprocess.Popen]) -> None:
    """Wait until the worker (procs[1]) registered with its scheduler (procs[0])."""
    end = time.monotonic() + JOIN_S
    while "Registered to" not in log.read_text():
        assert time.monotonic() < end and procs[1].poll() is None, _why(log, procs[0])
        time.sleep(0.2)


def _worker(addr: str, log) -> subprocess.Popen:
    with open(log, "w") as f:
        return subprocess.Popen([sys.executable, "-m", "manybench", "worker", addr, "--name",
                                 "w1", "--slots", "1", "--host", "127.0.0.1"], stderr=f)


def test_an_idle_worker_logs_no_stall(tmp_path):
    addr, sched = loopback_scheduler()
    log = tmp_path / "worker.log"
    procs = [sched]
    try:
        procs.append(_worker(addr, log))
        _joined(log, procs)
        time.sleep(11.5)        # two ticks and more: each was logged as a stall
    finally:
        stop(procs)
    text = log.read_text()
    assert "Starting Worker plugin manybench-agent" in text
    assert "unresponsive" not in text, text[-2000:]


def test_a_worker_joins_its_scheduler_though_the_port_found_free_for_it_was_taken(
        tmp_path, monkeypatch):
    """The parallel pass: a port found free (conftest.free_port) was taken by another test's
    process before the scheduler bound it; the scheduler failed, and the worker, reaching a
    node's port that speaks first (a manybench channel's challenge), failed to start 2 s
    later ("IOStream is not idle; cannot convert to SSL"). Here the port found free is held
    by such a speaker."""
    thief = socket.create_server(("127.0.0.1", 0))
    monkeypatch.setattr(conftest, "free_port", lambda: thief.getsockname()[1])

    def speak() -> None:
        while True:
            try:
                conn, _ = thief.accept()
            except OSError:         # closed: the test is over
                return
            with conn:
                conn.sendall(b"\0\0\0\x08not tls!")
    threading.Thread(target=speak, daemon=True).start()
    log = tmp_path / "worker.log"
    procs = []
    try:
        addr, sched = loopback_scheduler()
        procs.append(sched)
        procs.append(_worker(addr, log))
        _joined(log, procs)
    finally:
        stop(procs)
        thief.close()
