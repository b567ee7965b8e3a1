"""A Dask cluster of network-namespace nodes: the scheduler in namespace 0, one
`manybench worker` in each of the others, optionally one of them under libfaketime."""
from __future__ import annotations

import glob
import os
import sys

import pytest

from netns import Lab, require_netns
from waits import HANG_S, wait_workers

SCHED_PORT = 8786
FAKETIME_SHIFT_S = 0.004


def faketime_lib() -> str | None:
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    return found[0] if found else None


def node_env(shift_s: float | None = None) -> dict:
    env = dict(os.environ)
    if shift_s is not None:
        lib = faketime_lib()
        if lib is None:
            pytest.skip("libfaketime not installed (Debian package faketime)")
        env.update(LD_PRELOAD=lib, FAKETIME=f"{shift_s:+f}", FAKETIME_DONT_FAKE_MONOTONIC="1",
                   FAKETIME_NO_CACHE="1")
    return env


def ensure_credentials() -> str:
    """The cluster credentials every manybench command of this process and its children
    finds ($MANYBENCH_CREDENTIALS): the test session's (conftest.py), or, for a benchmark
    that starts labs, ones made here for this process."""
    if not os.environ.get("MANYBENCH_CREDENTIALS"):
        import tempfile
        from manybench.security.credentials import make
        where = os.path.join(tempfile.mkdtemp(prefix="mb-lab-"), "cluster")
        make(where)
        os.environ["MANYBENCH_CREDENTIALS"] = where
    return os.environ["MANYBENCH_CREDENTIALS"]


class DaskLab:
    """lab.scheduler: the address; nodes n1..nK in namespaces 1..K with `slots` each.
    env: added to every worker's environment; python: node index -> the command that stands
    for `python -m manybench` on that node (a worker of another manybench, say)."""

    def __init__(self, nodes: int, slots: int = 2, shifted: int | None = None,
                 extra_worker_args: list[str] | None = None, env: dict | None = None,
                 python: dict[int, list[str]] | None = None, insecure: bool = False) -> None:
        """insecure: the scheduler and workers started --insecure (plain TCP, no one
        authenticated), as an opted-out cluster is."""
        require_netns()
        ensure_credentials()
        self.insecure = insecure
        opt_out = ["--insecure"] if insecure else []
        self.lab = Lab(nodes + 1)
        try:
            ip0 = self.lab.ip(0)
            # secured as users' clusters are: the session's credentials (conftest.py)
            self.sched = self.lab.popen(0, [sys.executable, "-m", "manybench", "scheduler",
                                            "--host", ip0, "--port", str(SCHED_PORT), *opt_out])
            self.lab.wait_port(0, SCHED_PORT, 30, proc=self.sched)
            self.scheduler = f"{'tcp' if insecure else 'tls'}://{ip0}:{SCHED_PORT}"
            self.workers = {}
            for i in range(1, nodes + 1):
                shift = FAKETIME_SHIFT_S if shifted == i else None
                cmd = (python or {}).get(i, [sys.executable, "-m", "manybench"])
                self.workers[f"n{i}"] = self.lab.popen(
                    i, [*cmd, "worker", self.scheduler,
                        "--name", f"n{i}", "--slots", str(slots), "--host", self.lab.ip(i),
                        *opt_out, *(extra_worker_args or [])],
                    env={**node_env(shift), **(env or {})})
            self.wait_workers(nodes)
        except BaseException:
            self.lab.close()
            raise

    def wait_workers(self, n: int, timeout: float = HANG_S) -> None:
        from conftest import client_security
        wait_workers(self.scheduler, n, None if self.insecure else client_security(), timeout)

    def close(self) -> None:
        self.lab.close()

    def __enter__(self) -> "DaskLab":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
