"""A real Grid Engine for tests: the session fixture ``sge``.

``sge`` returns ``SgeInfo(queue, node)`` when ``qstat`` shows a usable queue instance. If it does
not, it runs ``bash scripts/sge-local.sh start`` once per session (installs Debian's
gridengine-master, gridengine-exec and gridengine-client, starts sge_qmaster and sge_execd on
this host) and asks again; when Grid Engine still is not usable the tests are skipped with
``Grid Engine (gridengine-master) not available: <why>``.

Environment:
  MANYBENCH_SGE_START=0   never run sge-local.sh (only use a Grid Engine that already answers)
  MANYBENCH_SGE_KEEP=1    leave daemons started by this fixture running after the session
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from daemons import stop_detached, wait_unlocked
from fastpass import require_e2e

__all__ = ["SgeInfo", "sge", "probe_sge"]

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "sge-local.sh"
RUN_DIR = "/run/manybench-sge"      # the script's pid files and lock
START_TIMEOUT = 900
ENV = {"SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}


@dataclass(frozen=True)
class SgeInfo:
    queue: str
    node: str


def probe_sge() -> tuple[SgeInfo | None, str]:
    """(info, "") when qstat -f lists a queue instance with no state flags, else (None, why)."""
    if shutil.which("qstat") is None:
        return None, "qstat not installed"
    try:
        out = subprocess.run(["qstat", "-f"], capture_output=True, text=True, timeout=30,
                             env={**os.environ, **ENV})
    except subprocess.TimeoutExpired:
        return None, "qstat timed out"
    if out.returncode != 0:
        return None, f"qstat failed: {(out.stderr or out.stdout).strip()[-300:]}"
    for line in out.stdout.splitlines():
        cols = line.split()
        # all.q@vm  BIP  0/0/8  0.50  lx-amd64  [states]
        if cols and "@" in cols[0] and len(cols) == 5:
            queue, node = cols[0].split("@", 1)
            return SgeInfo(queue=queue, node=node), ""
    return None, f"no usable queue instance in qstat -f:\n{out.stdout[-500:]}"


_result: tuple[SgeInfo | None, str] | None = None
_started_here = False


def _available() -> tuple[SgeInfo | None, str]:
    global _result, _started_here
    if _result is None:
        wait_unlocked(RUN_DIR)     # a stop of an earlier session's daemons is over
        info, why = probe_sge()
        if info is None and os.environ.get("MANYBENCH_SGE_START", "1") != "0":
            if os.geteuid() != 0 and shutil.which("sudo") is None:
                why += "; not root and no sudo to start a local Grid Engine"
            else:
                res = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True,
                                     text=True, timeout=START_TIMEOUT, stdin=subprocess.DEVNULL)
                if res.returncode != 0:
                    tail = "\n".join((res.stderr + res.stdout).strip().splitlines()[-15:])
                    why += f"; sge-local.sh start failed (exit {res.returncode}):\n{tail}"
                else:
                    _started_here = True
                    info, why2 = probe_sge()
                    why += f"; after sge-local.sh start: {why2}"
        _result = (info, why)
    return _result


@pytest.fixture(scope="session")
def sge():
    """SgeInfo(queue, node) of a usable Grid Engine (SGE_ROOT/SGE_CELL exported), else skip."""
    require_e2e("uses a real Grid Engine")
    info, why = _available()
    if info is None:
        pytest.skip(f"Grid Engine (gridengine-master) not available: {why}")
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    yield info
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    global _started_here
    if _started_here and os.environ.get("MANYBENCH_SGE_KEEP") != "1":
        _started_here = False
        stop_detached(SCRIPT)      # not waited for (tests/daemons.py)
