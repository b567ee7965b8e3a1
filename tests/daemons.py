"""Stopping the daemons a session fixture started (Slurm, Grid Engine) off the suite's path.

Their stop scripts wait for each daemon to exit (sge_qmaster takes ~6 s after SIGTERM, the
whole of Slurm and Grid Engine ~16 s): run in a fixture's teardown, that wait came at the very
end of one worker's share of the suite, after every other worker had finished. The stop runs
detached instead, and a later session that probes for the daemon first waits until no stop
(or start) holds the script's lock, so it never finds a daemon that is on its way out."""
from __future__ import annotations

import fcntl
import subprocess
import time
from pathlib import Path


def stop_detached(script: Path) -> None:
    """`bash SCRIPT stop` in a session of its own, not waited for (setsid -f forks it off)."""
    subprocess.run(["setsid", "-f", "bash", str(script), "stop"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def wait_unlocked(run_dir: str, timeout: float = 300) -> None:
    """Until RUN_DIR/lock (the scripts' flock) is free: a detached stop has finished. The
    scripts wait 300 s for it too (flock -w 300)."""
    lock = Path(run_dir) / "lock"
    if not lock.exists():
        return
    with open(lock, "rb") as f:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return          # the script itself will say who holds it
                time.sleep(0.2)
