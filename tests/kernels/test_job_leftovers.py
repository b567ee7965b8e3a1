"""What holds a launcher once its ranks ended (kernels/job_leftovers.py), without MPI: a
"launcher" that reads a pipe until EOF, whose child leaves a daemon holding the pipe's
write end, as a rank that forks a daemon holds its launcher's output."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil

from manybench.kernels import job_leftovers

LAUNCHER = """
import os, signal, sys
r, w = os.pipe()
child = os.fork()
if child == 0:                       # the "rank": leaves a daemon, then ends
    os.close(r)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            signal.pause()
        os._exit(0)
    os._exit(0)
os.close(w)
os.waitpid(child, 0)
sys.exit(len(os.read(r, 1)))         # EOF (0) once nothing holds the write end
"""


def test_a_daemon_holding_the_launchers_pipe_is_found_and_killed(tmp_path):
    said = tmp_path / "daemon.pid"
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(said)])
    try:
        deadline = time.monotonic() + 60
        while not said.exists():                 # the daemon says its pid when it is up
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        daemon = int(said.read_text())
        # a process of the tree maps the rank library (here: libc, which python maps): a
        # rank may still run, nothing is looked for
        assert job_leftovers.holders(proc.pid, "libc.so") is None
        found = job_leftovers.holders(proc.pid, "libmbrank.so")
        assert [p.pid for p in found] == [daemon]
        assert job_leftovers.describe(found[0]).startswith(f"pid {daemon} (")
        job_leftovers.kill(found)
        assert proc.wait(timeout=60) == 0        # its pipe at EOF: the launcher ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if said.exists():     # the test failed before its kill: the daemon, if it is ours
            try:
                left = psutil.Process(int(said.read_text()))
                if str(said) in left.cmdline():
                    left.kill()
            except psutil.Error:
                pass
