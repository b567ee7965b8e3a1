"""`meta.*`: mdtest-like metadata kernels (mkdir, create, stat, unlink, rmdir).

Items are named so that a sequence of tasks works on the same set, as mdtest's phases do:
meta.mkdir makes directories that a later meta.stat or meta.rmdir finds. Each kernel makes
its precondition true before T0 (clears leftovers for mkdir/create, lays out missing items
for stat/unlink/rmdir), never inside the timed window.

Names: one directory per slot, <scratch>/meta, holding d{i} (directories: mkdir, rmdir) and
f{i} (files: create, stat, unlink); with `shared`, one directory for all slots,
<shared>/meta, holding d.{rank}.{i} and f.{rank}.{i}. Rank r works on i = 0..items(r)-1.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from types import ModuleType

from .base import Kernel, KernelError, Param, Result, SlotContext
from .native import native, result_from_native, user_message

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


KIND = {"mkdir": "d", "rmdir": "d", "create": "f", "stat": "f", "unlink": "f"}
_CLEARS = ("mkdir", "create")  # need their items absent; the others need them present


def items_for(params: dict, rank: int, workers: int) -> int:
    """Items of rank `rank`: `items`, or its share of `total` (the first ranks get the rest)."""
    if params.get("items") is not None:
        return int(params["items"])
    total = int(params["total"])
    return total // workers + (1 if rank < total % workers else 0)


@dataclass
class _State:
    lib: ModuleType
    op: str
    dir: str
    prefix: str
    count: int


def _remove(path: str, kind: str, op: str) -> None:
    try:
        (os.rmdir if kind == "d" else os.unlink)(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise KernelError(user_message(f"meta.{op}", e.errno or 0,
                                       f"clearing leftover {path}: {e.strerror}")) from None


def _clear_leftovers(ctx: SlotContext, params: dict, op: str, d: str, shared: bool) -> None:
    """Removes this kind's items of earlier phases that lie outside every current range.

    Unique mode: the slot's own d{i}/f{i} with i >= its count. Shared mode: only rank 0
    sweeps, removing {kind}.{r}.{i} of ranks r >= workers or i >= items(r); the other ranks
    touch their own ranges only, so the sweep never races with them. Names that are not
    exactly ours (e.g. "d007") are left alone: a run deletes only what it created.
    """
    kind = KIND[op]
    num = r"(0|[1-9][0-9]*)"
    if shared:
        if ctx.rank != 0:
            return
        pat = re.compile(rf"{kind}\.{num}\.{num}")
    else:
        pat = re.compile(rf"{kind}{num}")
    keep = items_for(params, ctx.rank, ctx.workers)
    try:
        names = os.listdir(d)
    except OSError as e:
        raise KernelError(user_message(f"meta.{op}", e.errno or 0,
                                       f"cannot list {d}: {e.strerror}")) from None
    for name in names:
        m = pat.fullmatch(name)
        if not m:
            continue
        if shared:
            r, i = int(m.group(1)), int(m.group(2))
            stale = r >= ctx.workers or i >= items_for(params, r, ctx.workers)
        else:
            stale = int(m.group(1)) >= keep
        if stale:
            _remove(os.path.join(d, name), kind, op)


def _prepare(op: str, ctx: SlotContext, params: dict) -> _State:
    lib = native()
    shared = bool(params.get("shared"))
    kind = KIND[op]
    d = os.path.join(ctx.shared if shared else ctx.scratch, "meta")
    prefix = f"{kind}.{ctx.rank}." if shared else kind
    count = items_for(params, ctx.rank, ctx.workers)
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise KernelError(user_message(f"meta.{op} {d}", e.errno or 0,
                                       f"cannot create the directory: {e.strerror}")) from None
    if op in _CLEARS:
        _clear_leftovers(ctx, params, op, d, shared)
    try:
        lib.meta_prepare(op, d, prefix, 0, count)
    except OSError as e:
        raise KernelError(user_message(f"meta.{op}", e.errno or 0, e.strerror or str(e))) \
            from None
    return _State(lib=lib, op=op, dir=d, prefix=prefix, count=count)


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    d = st.lib.run_meta(st.op, st.dir, st.prefix, 0, st.count, t0_ns, spin_ns)
    return result_from_native(d, lambda err, text: user_message(f"meta.{st.op}", err, text))


_DOCS = {
    "mkdir": "mkdir() of each item (directories).",
    "create": "open(O_CREAT|O_EXCL) + close() of each item (empty files).",
    "stat": "stat() of each item (files, laid out before T0 when missing).",
    "unlink": "unlink() of each item (files, laid out before T0 when missing).",
    "rmdir": "rmdir() of each item (directories, laid out before T0 when missing).",
}

KERNELS = [
    Kernel(name=f"meta.{op}", doc=doc + " Ops = items; latency percentiles per operation.",
           params=PARAMS, prepare=functools.partial(_prepare, op), run=_run, check=_check,
           uses_dir=True)
    for op, doc in _DOCS.items()
]
