"""A real Slurm for tests: the session fixture ``slurm``.

Usage in a test module::

    from slurm_fixture import slurm  # noqa: F401  (the fixture)

    def test_x(slurm):
        subprocess.run(["sbatch", "--wait", "-p", slurm.partition, ...])

The fixture returns ``SlurmInfo(partition, node)`` when ``sinfo`` answers with an idle (or partly
used) node. If it does not, it runs ``bash scripts/slurm-local.sh start`` once per session (installs
slurm-wlm + munge with apt-get, starts munged/slurmctld/slurmd on this host) and asks again; when
Slurm still is not usable the tests are skipped with ``Slurm not available: <why>``.

Environment:
  MANYBENCH_SLURM_START=0   never run slurm-local.sh (only use a Slurm that already answers)
  MANYBENCH_SLURM_KEEP=1    leave daemons started by this fixture running after the session
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

__all__ = ["SlurmInfo", "slurm", "probe_slurm"]

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm-local.sh"
RUN_DIR = "/run/manybench-slurm"    # the script's pid files and lock
# "allocated" counts too: slurm-local.sh's partition lets up to 4 jobs share a core (OverSubscribe=FORCE:4).
USABLE_STATES = {"idle", "mixed", "allocated"}
MARKER = "# Written by manybench scripts/slurm-local.sh"  # first line of the slurm.conf it writes
START_TIMEOUT = 900  # seconds; covers apt-get update + install on a fresh machine


@dataclass(frozen=True)
class SlurmInfo:
    partition: str
    node: str


def _process_running(name: str) -> bool:
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == name:
                return True
        except OSError:
            pass
    return False


def probe_slurm() -> tuple[SlurmInfo | None, str]:
    """(info, "") when sinfo shows a usable node, else (None, why)."""
    if shutil.which("sinfo") is None:
        return None, "sinfo not installed"
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
    try:
        ours = MARKER in conf.read_text(errors="replace")
    except OSError:
        ours = False
    if ours and not _process_running("slurmctld"):
        # sinfo takes ~9 s to give up on a controller that is not there.
        return None, "the local slurmctld (slurm-local.sh) is not running"
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %P %T"], capture_output=True,
                             text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None, "sinfo timed out"
    if out.returncode != 0:
        return None, f"sinfo failed: {(out.stderr or out.stdout).strip()[-300:]}"
    rows = [line.split() for line in out.stdout.splitlines() if len(line.split()) == 3]
    if not rows:
        return None, "sinfo lists no node"
    usable = [(node, part, state) for node, part, state in rows
              if state.rstrip("*~#!%$@^-") in USABLE_STATES]
    if not usable:
        states = ", ".join(f"{n}={s}" for n, _, s in rows)
        return None, f"no idle node ({states})"
    # Prefer an idle node, then the default partition (sinfo marks it with '*').
    usable.sort(key=lambda r: (not r[2].startswith("idle"), not r[1].endswith("*")))
    node, part, _ = usable[0]
    return SlurmInfo(partition=part.rstrip("*"), node=node), ""


def _start_local() -> str:
    """Run slurm-local.sh start; return "" on success, else why it failed."""
    if not SCRIPT.exists():
        return f"{SCRIPT} missing"
    if os.geteuid() != 0 and shutil.which("sudo") is None:
        return "not root and no sudo to start a local Slurm"
    try:
        out = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True,
                             timeout=START_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"slurm-local.sh start timed out after {START_TIMEOUT}s"
    if out.returncode != 0:
        tail = "\n".join((out.stderr + out.stdout).strip().splitlines()[-15:])
        return f"slurm-local.sh start failed (exit {out.returncode}):\n{tail}"
    return ""


# Each module that does `from slurm_fixture import slurm` gets its own copy of the session fixture
# in pytest, so the probe/start result and the "who stops it" flag live here, once per process.
_result: tuple[SlurmInfo | None, str] | None = None
_started_here = False


def _available() -> tuple[SlurmInfo | None, str]:
    global _result, _started_here
    if _result is None:
        wait_unlocked(RUN_DIR)     # a stop of an earlier session's daemons is over
        info, why = probe_slurm()
        if info is None and os.environ.get("MANYBENCH_SLURM_START", "1") != "0":
            failure = _start_local()
            if failure:
                why = f"{why}; {failure}"
            else:
                _started_here = True
                info, why2 = probe_slurm()
                why = f"{why}; after slurm-local.sh start: {why2}"
        _result = (info, why)
    return _result


def _stop_if_started_here() -> None:
    global _started_here
    if _started_here and os.environ.get("MANYBENCH_SLURM_KEEP") != "1":
        _started_here = False
        stop_detached(SCRIPT)      # not waited for (tests/daemons.py)


@pytest.fixture(scope="session")
def slurm():
    """SlurmInfo(partition, node) of a usable Slurm, else the test is skipped."""
    require_e2e("uses a real Slurm")
    info, why = _available()
    if info is None:
        pytest.skip(f"Slurm not available: {why}")
    yield info
    _stop_if_started_here()
