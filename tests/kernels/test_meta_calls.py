"""meta.*'s timed loop makes mdtest's system calls: the same calls per item, with mdtest's
open flags, on paths as deep as mdtest's for the same directory. Counted under strace (noise
cannot move a count); mdtest's side is written down from its sources (hpc/ior src/mdtest.c
and aiori-POSIX.c), beside each entry.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

ITEMS = 40
# per item, mdtest 4's POSIX backend (x86-64 glibc): the call, and for an open its access mode
MDTEST = {
    # create_remove_items_helper: backend->mkdir(path, DIRMODE) / ->rmdir(path)
    "mkdir": Counter({"mkdir": 1}), "rmdir": Counter({"rmdir": 1}),
    # mdtest_stat: backend->stat(path) -> stat(2), newfstatat here
    "statdir": Counter({"stat": 1}), "stat": Counter({"stat": 1}),
    # backend->create(path, IOR_WRONLY | IOR_CREAT): POSIX_Create opens O_CREAT | O_RDWR;
    # then backend->close
    "create": Counter({"open O_RDWR": 1, "close": 1}),
    # mdtest_read: backend->open(path, O_RDONLY): O_RDONLY is 0, not IOR_RDONLY (1), so
    # POSIX_Open takes its last branch, O_RDWR; -e 0: no read; then close
    "read": Counter({"open O_RDWR": 1, "close": 1}),
    # create_remove_items_helper: backend->delete(path) -> unlink(2)
    "unlink": Counter({"unlink": 1}),
    # mdtest's rename phase: backend->rename(old, new), one per item
    "rename": Counter({"rename": 1}),
}

DRIVER = r"""
import os, sys
from manybench import _native
from manybench.kernels import KERNELS, SlotContext
op, top, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = SlotContext(run="r1", node="n1", slot=0, rank=0, workers=1, cpu=-1,
                  scratch=os.path.join(top, "r1", "0"), shared=os.path.join(top, "r1", "shared"))
k = KERNELS["meta." + op]
st = k.prepare(ctx, {"items": items})
os.path.exists("/mb-window-begin")      # markers in the trace
r = k.run(st, _native.now_ns() + 1_000_000, 0)
os.path.exists("/mb-window-end")
assert r.status == "ok" and r.ops == items, r.error
"""

_CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+)?(\w+)\((.*)\)\s+=\s+(-?\d+)")
_NAMES = {"mkdirat": "mkdir", "unlinkat": "unlink", "renameat": "rename",
          "renameat2": "rename", "newfstatat": "stat", "statx": "stat", "lstat": "stat",
          "openat": "open"}


def traced(op: str, top: str) -> tuple[Counter, list[str]]:
    """The calls of meta.<op>'s timed window (between the driver's markers), by kind (a *at
    call from the current directory as the plain call), and the paths they named."""
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=all", sys.executable, "-c",
                        DRIVER, op, top, str(ITEMS)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stderr.splitlines()
    begin = next(i for i, s in enumerate(lines) if "/mb-window-begin" in s)
    end = next(i for i, s in enumerate(lines) if "/mb-window-end" in s)
    calls: Counter = Counter()
    paths = []
    for line in lines[begin + 1:end]:
        m = _CALL.match(line)
        if not m:
            continue
        name, args = _NAMES.get(m.group(1), m.group(1)), m.group(2)
        if name == "unlink" and "AT_REMOVEDIR" in args:
            name = "rmdir"
        if name in ("open", "mkdir", "rmdir", "unlink", "stat", "rename"):
            paths += re.findall(r'"([^"]*)"', args)
        if name == "open":
            name += " " + next(f for f in ("O_RDONLY", "O_WRONLY", "O_RDWR") if f in args)
        calls[name] += 1
    return calls, paths


@pytest.mark.parametrize("op", sorted(MDTEST))
def test_calls_per_item_are_mdtests(tmp_path, op):
    calls, paths = traced(op, str(tmp_path))
    item = {name: n for name, n in calls.items() if name in MDTEST[op] or n >= ITEMS}
    assert Counter(item) == Counter({k: v * ITEMS for k, v in MDTEST[op].items()}), calls
    # every item's path as deep below the directory as mdtest -d's: <dir>/test-dir.0-0/
    # mdtest_tree.0/<item> there, <dir>/<run>/mdtest_tree.0/<item> here
    for p in paths:
        rel = os.path.relpath(p, tmp_path).split("/")
        assert rel[1] == "mdtest_tree.0" and len(rel) == 3, p
