"""Keeps `pytest -m "not e2e"` (the everyday pass) fast and honest: a test that goes through the
command line in a subprocess, starts a cluster (Dask in namespaces, Slurm, Grid Engine), submits
a batch job or runs fio, IOR or chromium must be marked e2e, or it fails saying so.

conftest.py sets `current` to the running test; run_cli, the labs and the cluster fixtures call
`require_e2e`, and every subprocess started while a test runs is checked by `spawn_reason`."""
from __future__ import annotations

import os
import re
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:     # pytest only when a test fails: the benchmarks import netns.py
    import pytest

MARK = "e2e"
current: pytest.Item | None = None    # the test being set up, run or torn down

_SCHEDULERS = {"sbatch", "srun", "salloc", "qsub", "qrsh"}          # a batch job
_TOOLS = {"fio", "ior", "IOR", "mdtest", "chromium", "chromium-browser"}   # a real benchmark run
_ASKING = {"--version", "-V", "--help", "-h"}         # asking a tool its version runs nothing


def require_e2e(what: str) -> None:
    """Fail the running test unless it is marked e2e: it `what` (goes through a real component)."""
    item = current
    if item is not None and item.get_closest_marker(MARK) is None:
        import pytest
        pytest.fail(f"{item.nodeid} {what}, so it is an end-to-end test: mark it "
                    f"@pytest.mark.{MARK} (or the module: pytestmark = pytest.mark.{MARK})",
                    pytrace=False)


_MANYBENCH = re.compile(r"(?:^|\s)-m\s+(manybench(?:\.\w+)*)(?!\w)")


def spawn_reason(argv: object) -> str | None:
    """Why starting `argv` makes a test e2e, or None (a shell's command line is searched too)."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        args = [os.fsdecode(argv)]
    else:
        args = [os.fsdecode(a) for a in argv]
    found = _MANYBENCH.search(" ".join(args))
    if found:
        return f"starts `python -m {found.group(1)}`"
    program = os.path.basename(args[0].split()[0]) if args and args[0].strip() else ""
    if program in _SCHEDULERS:
        return f"submits to a batch scheduler ({program})"
    if program in _TOOLS and not _ASKING & set(args[1:]):
        return f"runs {program}"
    return None


_popen_init = subprocess.Popen.__init__


def _checked_init(self, args, *a, **kw):
    reason = spawn_reason(args) if current is not None else None
    if reason is not None:
        require_e2e(reason)
    _popen_init(self, args, *a, **kw)


def install() -> None:
    """Check every subprocess this pytest process starts (subprocess.run and friends too)."""
    subprocess.Popen.__init__ = _checked_init
