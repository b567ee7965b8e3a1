"""Another local user of this machine, for the tests that attack a run as a hostile neighbour
would (issue 28): a plain account made with useradd when the tests run as root (CI does),
and a way to run Python code as that user (the system's python3: the tests' own may live
under a home directory only root can read)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess

import pytest

NAME = "mb-other"
PYTHON = "/usr/bin/python3"


def other_user() -> tuple[int, int]:
    """(uid, gid) of the second user, made if missing; skips saying why when it cannot be."""
    if os.geteuid() != 0:
        pytest.skip("needs root to add and become a second local user (useradd; CI runs "
                    "as root)")
    if not os.access(PYTHON, os.X_OK):
        pytest.skip(f"no {PYTHON} for the second user to run (Debian python3)")
    try:
        pw = pwd.getpwnam(NAME)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        if not os.access(useradd, os.X_OK):
            pytest.skip("useradd not installed (Debian passwd)")
        # another test process may add it at the same moment: its "exists" (9) is as good
        done = subprocess.run([useradd, "--system", "--no-create-home", "--shell",
                               "/usr/sbin/nologin", NAME], capture_output=True, text=True)
        if done.returncode not in (0, 9):
            pytest.skip(f"useradd {NAME} failed: {done.stderr.strip()}")
        pw = pwd.getpwnam(NAME)
    return pw.pw_uid, pw.pw_gid


def run_as(user: tuple[int, int], code: str, *args: str, timeout: float = 120,
           wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:
    """Python `code` run as `user` with `args` (sys.argv[1:]), in /, with a bare environment:
    its stdout parsed as JSON when it ends (wait), else the running process."""
    argv = [PYTHON, "-c", code, *args]
    kw = dict(user=user[0], group=user[1], extra_groups=[], cwd="/",
              env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL)
    if not wait:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, **kw)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def answer(done: subprocess.CompletedProcess) -> dict:
    """What the second user's code printed last (one JSON line), whatever became of it after
    (a slot fooled into taking it for its rank killed it at the phase's end)."""
    lines = done.stdout.strip().splitlines()
    assert lines, (done.returncode, done.stderr)
    return json.loads(lines[-1])
