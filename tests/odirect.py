"""Producing a file system that refuses O_DIRECT, for the kernels' clear-error tests:
tmpfs refused it before Linux 6.6; ramfs still does (mounted in a private mount namespace)."""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys

import pytest

import manybench


def odirect_refused(d: str) -> bool:
    probe = os.path.join(d, f".mb-odirect-{os.getpid()}")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600))
        return False
    except OSError as e:
        return e.errno == errno.EINVAL
    finally:
        try:
            os.unlink(probe)
        except OSError:
            pass


def in_private_ramfs(tmp_path, script: str) -> str:
    """Run `python -c script MOUNTPOINT` with a ramfs mounted there in a private mount
    namespace (the host's mounts untouched); its stdout. Skips when that is impossible."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("tmpfs accepts O_DIRECT here and mounting ramfs needs root + unshare")
    mnt = tmp_path / "ramfs"
    mnt.mkdir()
    src = os.path.dirname(os.path.dirname(manybench.__file__))
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount -t ramfs none "$1" || exit 42; exec "$2" -c "$3" "$1"', "sh",
         str(mnt), sys.executable, script],
        capture_output=True, text=True, env=env, timeout=60)
    if p.returncode == 42 or "unshare failed" in p.stderr:
        pytest.skip(f"cannot mount a ramfs to test with: {p.stderr.strip()}")
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.strip()
