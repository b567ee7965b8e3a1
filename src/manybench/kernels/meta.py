"""`meta.*`: mdtest-like metadata kernels (mkdir, create, stat, unlink, rmdir).

Items are named so that a sequence of tasks works on the same set, as mdtest's phases do:
meta.mkdir makes directories that a later meta.stat or meta.rmdir finds. Each kernel makes
its precondition true before T0 (clears leftovers for mkdir/create, lays out missing items
for stat/unlink/rmdir), never inside the timed window.
"""
from __future__ import annotations

from .base import Kernel, Param, Result

PARAMS = {
    "dir": Param("dir", "Directory to work under (see io.write)."),
    "items": Param("int", "Items per slot.", minimum=1),
    "total": Param("int", "Items in all, split over the phase's slots (SMTEF's fixed 20,000 "
                          "directories).", minimum=1),
    "shared": Param("bool", "All slots work in one shared directory instead of one each.",
                    default=False),
}


def _check(params: dict) -> list[tuple[str, str]]:
    if (params.get("items") is None) == (params.get("total") is None):
        return [("items", "give exactly one of `items` (per slot) or `total` (split over slots)")]
    return []


def _not_yet(*a, **k) -> Result:  # replaced by the native kernels work
    raise NotImplementedError


_DOCS = {
    "mkdir": "mkdir() of each item (directories).",
    "create": "open(O_CREAT|O_EXCL) + close() of each item (empty files).",
    "stat": "stat() of each item (files, laid out before T0 when missing).",
    "unlink": "unlink() of each item (files, laid out before T0 when missing).",
    "rmdir": "rmdir() of each item (directories, laid out before T0 when missing).",
}

KERNELS = [
    Kernel(name=f"meta.{op}", doc=doc + " Ops = items; latency percentiles per operation.",
           params=PARAMS, prepare=_not_yet, run=_not_yet, check=_check, uses_dir=True)
    for op, doc in _DOCS.items()
]
