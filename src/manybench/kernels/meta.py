"""`meta.*`: mdtest's metadata phases, in mdtest's layout, by full path.

The layout is mdtest's: a directory tree `mdtest_tree.0` (one for all slots, mdtest's
default; with unique = true one per slot, `mdtest_tree.<rank>.0`, as mdtest -u) in the run's
scratch root {dir}/<run>, where mdtest -d {dir} has its {dir}/test-dir.0-0 (so every path
has as many components as mdtest's for the same directory; the root's shared/ would add
one to each walk), with `branch` children per directory and `depth` levels below the
root (mdtest -b, -z). A slot's `items` (mdtest -n) are spread over the tree's directories,
`items // directories` in each (as mdtest; the rest are dropped, as mdtest does), and named
`dir.mdtest.<rank>.<i>` and `file.mdtest.<rank>.<i>`. Every operation walks the item's full
path, as mdtest and applications do; at = true makes them relative to open directories (the
*at calls: a faster figure that is not mdtest's). native/meta.c lists the calls and flags.

Scratch is hostile ground (scratchfs.py): before T0 every directory of the tree is reached by
descriptor from the run's root and must be this user's alone, and every item is made,
cleared or checked relative to its directory's descriptor; a link, a FIFO, a socket, a
device or a file with two links found where an item goes is a phase error naming it, never
followed, written, removed or waited on. The timed loop keeps mdtest's calls, one per item,
with flags that refuse the same objects (native/meta.c).

Tasks in sequence work on the same items, as mdtest's phases do: meta.mkdir makes the
directories a later meta.statdir, meta.rename or meta.rmdir finds (same items, branch, depth
and unique). Each kernel makes its precondition true before T0 (clears leftovers for
mkdir/create, lays out missing items for the others), never inside the timed window.
"""
from __future__ import annotations

import errno
import functools
import os
import re
from dataclasses import dataclass
from types import ModuleType

from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param
from .figures import ELAPSED, LATENCY, OPS_RATE
from .native import native, result_from_native, user_message
from .scratchfs import below, open_below, root_of

MAX_DIRS = 100_000   # tree directories a plan may ask for

PARAMS = {
    "dir": Param("dir", "Directory to work under (mdtest -d): the tree is made in {dir}/<run>, "
                        "as mdtest's in {dir}/test-dir.0-0."),
    "items": Param("int", "Items per slot (mdtest -n).", minimum=1),
    "total": Param("int", "Items in all, split over the phase's slots (SMTEF's fixed 20,000 "
                          "directories).", minimum=1),
    "branch": Param("int", "Child directories of every tree directory (mdtest -b).", default=1,
                    minimum=1),
    "depth": Param("int", "Levels of the tree below its root (mdtest -z); 0: every item in the "
                          "root.", default=0, minimum=0),
    "unique": Param("bool", "A tree per slot (mdtest -u) instead of one shared by all slots "
                            "(mdtest's default).", default=False),
    "at": Param("bool", "Operate relative to open directories (mkdirat, openat, ...): no path "
                        "walk. Faster than mdtest on every file system, and not what it "
                        "measures: a variant to set beside the default.", default=False),
    "bytes": Param("size", "create: bytes written to each file (mdtest -w); read: bytes read "
                           "from each (mdtest -e); 0: open and close only.", default=0),
}

KIND = {"mkdir": "dir", "rmdir": "dir", "statdir": "dir", "rename": "dir", "create": "file",
        "stat": "file", "read": "file", "unlink": "file"}
_CLEARS = ("mkdir", "create")  # need their items absent; the others need them present


def _check(params: dict) -> list[tuple[str, str]]:
    out = []
    if (params.get("items") is None) == (params.get("total") is None):
        out.append(("items", "give exactly one of `items` (per slot) or `total` (split over "
                             "slots)"))
    if tree_size(params.get("branch") or 1, params.get("depth") or 0) > MAX_DIRS:
        out.append(("depth", f"the tree would have more than {MAX_DIRS:,} directories"))
    return out


def items_for(params: dict, rank: int, workers: int) -> int:
    """Items of rank `rank`: `items`, or its share of `total` (the first ranks get the rest)."""
    if params.get("items") is not None:
        return int(params["items"])
    total = int(params["total"])
    return total // workers + (1 if rank < total % workers else 0)


def tree_size(branch: int, depth: int) -> int:
    """Directories in mdtest's tree: 1 + b + b^2 + ... + b^depth."""
    return sum(branch ** d for d in range(depth + 1))


def tree_dirs(root_parent: str, base: str, branch: int, depth: int) -> list[str]:
    """Paths of the tree's directories by number (mdtest's numbering: the root is base.0,
    the children of k are base.(k*branch+1) .. base.(k*branch+branch))."""
    root = os.path.join(root_parent, f"{base}.0")
    paths = [root]
    for k in range(1, tree_size(branch, depth)):
        paths.append(os.path.join(paths[(k - 1) // branch], f"{base}.{k}"))
    return paths


@dataclass
class _State:
    lib: ModuleType
    op: str
    root: str
    dirs: list[str]          # relative to root
    prefix: str
    per_dir: int
    count: int
    bytes: int
    at: bool


def _remove(lib: ModuleType, dfd: int, d: str, name: str, kind: str, op: str) -> None:
    """A leftover item of ours removed from the open directory dfd (d: its path); anything
    but what the phase makes (native/scratch.c's rule) is refused and left where it is."""
    path = os.path.join(d, name)
    try:
        lib.scratch_check(dfd, name, kind == "dir", path)
        (os.rmdir if kind == "dir" else os.unlink)(name, dir_fd=dfd)
    except FileNotFoundError:
        pass
    except OSError as e:
        if e.errno == errno.EPERM and not e.strerror.endswith(os.strerror(errno.EPERM)):
            raise KernelError(f"meta.{op}: {e.strerror} (a leftover of an earlier phase was "
                              "looked for there)") from None
        raise KernelError(user_message(f"meta.{op}", e.errno or 0,
                                       f"clearing leftover {path}: {e.strerror}")) from None


def _clear_leftovers(lib: ModuleType, ctx: SlotContext, params: dict, op: str, dfd: int,
                     d: str, ndirs: int, unique: bool) -> None:
    """Removes this kind's items of earlier phases that lie outside every current range from
    the tree directory open as dfd (d: its path).

    A tree per slot: the slot's own items with i >= its count. A shared tree: only rank 0
    sweeps, removing items of ranks r >= workers or i >= items(r); the other ranks touch
    their own ranges only, so the sweep never races with them. Names that are not exactly
    ours (e.g. "dir.mdtest.0.007") are left alone: a run deletes only what it created.
    """
    if not unique and ctx.rank != 0:
        return
    kind = KIND[op]
    num = r"(0|[1-9][0-9]*)"
    pat = re.compile(rf"{kind}\.mdtest\.{num}\.{num}(-XX)?")

    def count(rank: int) -> int:
        return items_for(params, rank, ctx.workers) // ndirs * ndirs
    try:
        names = os.listdir(dfd)
    except OSError as e:
        raise KernelError(user_message(f"meta.{op}", e.errno or 0,
                                       f"cannot list {d}: {e.strerror}")) from None
    for name in names:
        m = pat.fullmatch(name)
        if not m:
            continue
        r, i = int(m.group(1)), int(m.group(2))
        if unique and r != ctx.rank:
            continue          # not this slot's tree
        if m.group(3) or r >= ctx.workers or i >= count(r):
            _remove(lib, dfd, d, name, kind, op)


def _prepare(op: str, ctx: SlotContext, params: dict) -> _State:
    lib = native()
    unique = bool(params.get("unique"))
    branch, depth = params.get("branch") or 1, params.get("depth") or 0
    base = f"mdtest_tree.{ctx.rank}" if unique else "mdtest_tree"
    root = os.path.abspath(root_of(ctx))
    dirs = tree_dirs(root, base, branch, depth)
    items = items_for(params, ctx.rank, ctx.workers)
    per_dir = items // len(dirs)
    if items and not per_dir:
        raise KernelError(f"meta.{op}: {items} items per slot cannot fill the tree's "
                          f"{len(dirs)} directories (mdtest -b, -z): give more items or a "
                          "smaller tree")
    label = f"meta.{op}"
    # the tree is made and checked by descriptor before T0 (scratchfs.py: a link or a file
    # planted in its place is refused); the items (native/meta.c: every directory this
    # user's alone first), then leftovers, relative to each directory's descriptor
    for d in dirs:
        os.close(open_below(root, d, os.O_DIRECTORY | os.O_CREAT, label))
    st = _State(lib=lib, op=op, root=root, dirs=[below(root, d, label) for d in dirs],
                prefix=f"{KIND[op]}.mdtest.{ctx.rank}.", per_dir=max(per_dir, 1),
                count=per_dir * len(dirs), bytes=params.get("bytes") or 0,
                at=bool(params.get("at")))
    try:
        lib.meta_prepare(op, st.root, st.dirs, st.prefix, st.per_dir, 0, st.count, st.bytes,
                         st.at)
    except OSError as e:
        if e.errno == errno.EPERM:       # what was found where an item goes: the C names it
            raise KernelError(f"{label}: {e.strerror}") from None
        raise KernelError(user_message(label, e.errno or 0, e.strerror or str(e))) \
            from None
    if op in _CLEARS or op == "rename":  # apart from the items: in either order
        for d in dirs:
            dfd = open_below(root, d, os.O_DIRECTORY, label)
            try:
                _clear_leftovers(lib, ctx, params, op, dfd, d, len(dirs), unique)
            finally:
                os.close(dfd)
    return st


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    d = st.lib.run_meta(st.op, st.root, st.dirs, st.prefix, st.per_dir, 0, st.count, st.bytes,
                        st.at, t0_ns, spin_ns)
    return result_from_native(d, functools.partial(_explain, f"meta.{st.op}"),
                              bytes=st.bytes * d["ops"] if st.op in ("create", "read") else 0)


def _explain(label: str, err: int, text: str) -> str:
    # a call that failed ends with its strerror (nb_fail) and gets a hint; what was found
    # where an item goes (a link, a FIFO: native/scratch.c's words) is said as it is
    if not text.endswith(os.strerror(err)):
        return f"{label}: {text}"
    return user_message(label, err, text)


_DOCS = {
    "mkdir": "mkdir(path, 0775) of each item: mdtest's directory creation.",
    "statdir": "stat(path) of each directory (made before T0 when missing): mdtest's "
               "directory stat.",
    "rename": "rename of each directory as mdtest's rename phase does it (item 0 to "
              "\"-XX\", each next to the name before it): mdtest's directory rename.",
    "rmdir": "rmdir(path) of each directory (made before T0 when missing): mdtest's "
             "directory removal.",
    "create": "open(path, O_CREAT|O_RDWR, 0664), `bytes` written, close: mdtest's file "
              "creation.",
    "stat": "stat(path) of each file (made before T0 when missing): mdtest's file stat.",
    "read": "open(path, O_RDWR), `bytes` read, close (files made before T0 when missing): "
            "mdtest's file read (mdtest passes O_RDONLY, 0, where its POSIX backend expects "
            "IOR_RDONLY, so its open is O_RDWR).",
    "unlink": "unlink(path) of each file (made before T0 when missing): mdtest's file "
              "removal.",
}

KERNELS = [
    Kernel(name=f"meta.{op}", doc=doc + " Ops = items; latency percentiles per operation.",
           params=PARAMS, prepare=functools.partial(_prepare, op),
           figures=(OPS_RATE.first(), LATENCY.first(), ELAPSED), run=_run, check=_check,
           uses_dir=True, progress="ops")
    for op, doc in _DOCS.items()
]
