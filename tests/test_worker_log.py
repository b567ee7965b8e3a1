"""What a `manybench worker` tells in its log: an idle worker logs no stall.

Its event loop checks itself every 5 s, not every 20 ms (node/worker.py), so Dask's stall
alarm (ticks more than 3 s apart) fired at every tick of every worker: "Event loop was
unresponsive in Worker for 5.00s", twice per 5 s on two nodes, which was taken for the cause
of a failure it had nothing to do with."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import loopback_scheduler, stop

pytestmark = pytest.mark.e2e   # a real Dask scheduler and worker


def test_an_idle_worker_logs_no_stall(tmp_path):
    addr, sched = loopback_scheduler()
    log = tmp_path / "worker.log"
    procs = [sched]
    try:
        with open(log, "w") as f:
            procs.append(subprocess.Popen([sys.executable, "-m", "manybench", "worker", addr,
                                           "--name", "w1", "--slots", "1", "--host",
                                           "127.0.0.1"], stderr=f))
        end = time.monotonic() + 60
        while "Registered to" not in log.read_text():
            assert time.monotonic() < end and procs[1].poll() is None, log.read_text()[-2000:]
            time.sleep(0.2)
        time.sleep(11.5)        # two ticks and more: each was logged as a stall
    finally:
        stop(procs)
    text = log.read_text()
    assert "Starting Worker plugin manybench-agent" in text
    assert "unresponsive" not in text, text[-2000:]
