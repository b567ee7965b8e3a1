"""`io.write` / `io.read`: sequential I/O on a per-slot file under the slot's scratch directory.

IOR's semantics where IOR defines them (its -D, stoneWallingWearOut and -C):
  duration     the stonewall: every slot stops issuing at T0 + duration
  wear_out     (writes, with duration) after the stonewall the phase's slots agree on the
               most blocks any of them had written, and each goes on until it has written as
               many, inside the timed window, as IOR's stoneWallingWearOut: every slot writes
               the same amount. Records carry the stonewall figures (stonewall_s,
               stonewall_bytes, stonewall_blocks) beside the whole run's.
  reorder      (reads) each slot reads the file the next rank wrote, one node over (IOR -C),
               so no node reads back the pages it cached while writing
"""
from __future__ import annotations

import errno
import os
from types import ModuleType

from ..config import timing
from ..extra_keys import FILE
from . import io_ior
from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param, Standalone
from .iofile import (ALIGN, IoState, check_direct, explain, file_problems, laid_out, open_file,
                     slot_file)
from .native import native, result_from_native, user_message
from .figures import (BANDWIDTH, ELAPSED, FSYNC, LATENCY, OPS_RATE, READS_CACHE, REORDER_SHIFT,
                      STONEWALL, STONEWALL_BLOCKS, STONEWALL_BYTES, STONEWALL_S,
                      WEAR_OUT_BLOCKS)
from .pagecache import CACHE, add_from_memory, prepare_cache, read_bytes
from .peers import Group
from .rank_keys import phase_token
from .scratchfs import make_dir, root_of


_COMMON = {
    "dir": Param("dir", "Directory to work under; each slot uses {dir}/<run>/<slot>/. "
                        "Defaults to the plan's `scratch`, else <results dir>/scratch."),
    "file": Param("str", "File name inside the slot's directory; a reader finds a writer's file "
                         "of the same run by this name.", default="io.dat"),
    "size": Param("size", "Bytes per slot (\"1GiB\"). With `duration` too, whichever comes first."),
    "duration": Param("duration", "Stonewall: stop at T0 + duration (\"10s\"), same instant for "
                                  "every slot."),
    "block": Param("size", "Bytes per write/read call.", default="1MiB", minimum=1),
    "direct": Param("bool", "O_DIRECT (bypass the page cache); block and size must be multiples "
                            "of 4096, and the file system must allow it.", default=False),
}


def _check_common(params: dict) -> list[tuple[str, str]]:
    """Checks of both kernels' shared fields, at plan check (and again in prepare)."""
    out = file_problems(params)
    if params.get("direct"):
        out += [(k, f"direct = true needs a multiple of {ALIGN} bytes, got {params[k]}")
                for k in ("block", "size") if params.get(k) is not None and params[k] % ALIGN]
    return out


def _check_amount(params: dict) -> list[tuple[str, str]]:
    out = _check_common(params)
    if params.get("size") is None and params.get("duration") is None:
        out.append(("size", "give `size` or `duration` (or both)"))
    if params.get("wear_out") and params.get("duration") is None:
        out.append(("wear_out", "needs a stonewall: give `duration` (IOR: -D with "
                                "stoneWallingWearOut)"))
    return out


def _check_read(params: dict) -> list[tuple[str, str]]:
    out = _check_common(params)
    if params.get("size") is None:
        out.append(("size", "io.read needs `size`: the file is laid out to it when missing"))
    return out


def _params(params: dict) -> dict:
    """The kernel's values with defaults filled in (a caller may leave defaults out)."""
    out = dict(params)
    for name, spec in _COMMON.items():
        if out.get(name) is None and isinstance(spec.default, (str, bool)):
            out[name] = spec.parse(spec.default)
    return out


def _state(params: dict, write: bool, fd: int, path: str, lib: ModuleType) -> IoState:
    duration = params.get("duration")
    # A write stops at size or at the stonewall, whichever comes first. A read with a
    # duration is time-based, as fio's time_based: size is the file's extent and reading
    # wraps at its end until the stonewall.
    size = params.get("size") or 0
    if not write and duration:
        size = 0
    return IoState(lib=lib, fd=fd, path=path, write=write, block=params["block"],
                  size=size, duration=duration,
                  fsync_end=write and (params.get("fsync") or "end") == "end",
                  direct=bool(params["direct"]))


def _preallocate(lib: ModuleType, fd: int, size: int) -> None:
    """fio's fallocate=native: a file system too full for the whole file is told by the
    writes themselves, at the offset where space ran out (fio logs the failed fallocate and
    writes on), never as a failed prepare."""
    try:
        lib.preallocate(fd, size)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise


def _prepare_write(ctx: SlotContext, params: dict) -> IoState:
    lib = native()
    params = _params(params)
    check_direct("io.write", params)
    for fld, msg in _check_amount(params):
        raise KernelError(f"io.write: {fld}: {msg}")
    path = slot_file(ctx, params, "io.write")
    fd = open_file(root_of(ctx), path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                   params["direct"], "io.write")
    try:   # before T0, as fio does: fallocate=native (its default), fadvise_hint
        if params.get("fallocate", True) and params.get("size") and not params.get("duration"):
            _preallocate(lib, fd, params["size"])
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    except OSError as e:
        os.close(fd)
        raise KernelError(user_message("io.write", e.errno or 0,
                                       f"before the writes: {e.strerror}")) from None
    st = _state(params, True, fd, path, lib)
    st.rank, st.workers = ctx.rank, ctx.workers
    if params.get("wear_out"):
        try:
            token = phase_token(ctx.job_key, "io group", ctx.run, ctx.phase)
        except ValueError as e:
            raise KernelError(f"io.write (wear_out): {e}") from None
        st.group = Group(ctx.rank, ctx.workers, timing("kernels.io_peers") + (st.duration or 0),
                         "io.write (wear_out)", token, ctx.host)
    return st


def _prepare_read(ctx: SlotContext, params: dict) -> IoState:
    lib = native()
    params = _params(params)
    check_direct("io.read", params)
    path = slot_file(ctx, params, "io.read")
    size = params.get("size") or 0
    fd = laid_out(root_of(ctx), path, size, params["block"], params["direct"], "io.read", lib)
    try:
        cache = prepare_cache(lib, fd, size or os.fstat(fd).st_size,
                              params.get("cache") or CACHE.default, f"io.read {path}")
        # POSIX_FADV_SEQUENTIAL (a larger read-ahead window), as fio's default fadvise_hint=1
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    except (OSError, KernelError) as e:
        os.close(fd)
        if isinstance(e, KernelError):
            raise
        raise KernelError(user_message(f"io.read {path}", e.errno or 0,
                                       f"fadvise before the reads: {e.strerror}")) from None
    st = _state(params, False, fd, path, lib)
    st.metrics.update(cache)
    st.read_bytes0 = read_bytes()
    st.rank, st.workers, st.cache = ctx.rank, ctx.workers, params.get("cache") or "drop"
    st.root = root_of(ctx)
    st.reorder = bool(params.get("reorder")) and ctx.workers > 1
    return st


def _run(st: IoState, t0_ns: int, spin_ns: int) -> Result:
    if st.group is not None:
        return io_ior.wear_out(st, t0_ns, spin_ns)
    deadline = t0_ns + round(st.duration * 1e9) if st.duration else 0
    d = st.lib.run_io(st.fd, st.write, st.block, st.size, deadline, st.fsync_end, st.direct,
                      t0_ns, spin_ns)
    return _finish(st, d)


def _finish(st: IoState, d: dict) -> Result:
    """The Result of a run_io dict (the extension's or mbkernel's)."""
    metrics = dict(st.metrics)
    if not st.write:
        add_from_memory(metrics, st.read_bytes0, d.get("bytes", 0))
    if st.fsync_end and d.get("fsync_ns"):
        metrics["fsync_us"] = d["fsync_ns"] / 1e3
    return result_from_native(d, lambda err, text: explain(st, err, text), metrics=metrics,
                              extra={FILE: st.path})


def _standalone_args(ctx: SlotContext, params: dict, write: bool) -> dict:
    """mbkernel's arguments: the checks of _prepare_*; the file is opened (and, for a read,
    laid out, its cache dropped and counted) by mbkernel itself, inside the wrap."""
    label = "io.write" if write else "io.read"
    params = _params(params)
    check_direct(label, params)
    if write:
        for fld, msg in _check_amount(params):
            raise KernelError(f"io.write: {fld}: {msg}")
    elif params.get("size") is None:
        raise KernelError("io.read: size: needed (the file is laid out to it when missing)")
    if params.get("wear_out") or (params.get("reorder") and ctx.workers > 1):
        raise KernelError(f"{label}: wear_out and reorder cannot run inside a wrap (their "
                          "slots talk to each other)")
    slot_file(ctx, params, label)     # the file name's checks
    # mbkernel opens root/path by descriptor itself (the wrap may bind the slot's directory
    # alone, so that is its root); the directory is made and checked here first
    make_dir(root_of(ctx), ctx.scratch, label)
    out = {"root": ctx.scratch, "path": params["file"], "block": params["block"],
           "size": params.get("size") or 0,
           "duration_ns": round((params.get("duration") or 0) * 1e9),
           "direct": int(bool(params["direct"]))}
    if write:
        out["fsync"] = int((params.get("fsync") or "end") == "end")
        out["fallocate"] = int(bool(params.get("fallocate", True)))
    else:
        out["cache"] = params.get("cache") or CACHE.default
    return out


def _standalone_finish(d: dict, args: dict, write: bool) -> Result:
    size = 0 if not write and args["duration_ns"] else args["size"]
    st = IoState(lib=None, fd=-1, path=os.path.join(args["root"], args["path"]),  # type: ignore[arg-type]
                 write=write,
                 block=args["block"], size=size, duration=args["duration_ns"] / 1e9 or None,
                 fsync_end=bool(args.get("fsync")), direct=bool(args["direct"]))
    if not write:
        st.metrics = {"cache_dropped": float(d["cache_dropped"]),
                      "cached_fraction": float(d["cached_fraction"])}
    return _finish(st, d)


def _standalone(write: bool) -> Standalone:
    return Standalone(args=lambda ctx, params: _standalone_args(ctx, params, write),
                      finish=lambda d, args: _standalone_finish(d, args, write))


def _cleanup(st: IoState) -> None:
    if st.group is not None:
        st.group.close()
    if st.fd >= 0:
        fd, st.fd = st.fd, -1
        try:  # NFS and friends may report deferred write errors only here
            os.close(fd)
        except OSError as e:
            raise KernelError(user_message(st.label, e.errno or 0,
                                           f"closing the file: {e.strerror}")) from None


_FIGURES = (BANDWIDTH.first(), LATENCY.first(), OPS_RATE, STONEWALL, ELAPSED, FSYNC)
WRITE_FIGURES = _FIGURES + (STONEWALL_S, STONEWALL_BYTES, STONEWALL_BLOCKS, WEAR_OUT_BLOCKS)
READ_FIGURES = _FIGURES + READS_CACHE + (REORDER_SHIFT,)

WRITE = Kernel(
    name="io.write",
    figures=WRITE_FIGURES,
    doc="Sequential writes of `block` bytes to one file per slot until `size` or `duration`. "
        "Reports bytes, ops and per-operation latency percentiles.",
    params={**_COMMON,
            "fsync": Param("choice", "fsync the file at the end, inside the timed window (as "
                                     "fio's end_fsync), or never.", default="end",
                           choices=("end", "never")),
            "wear_out": Param("bool", "With duration: after the stonewall every slot writes on "
                                      "until it has written as many blocks as the fastest "
                                      "had (IOR's stoneWallingWearOut); records carry the "
                                      "stonewall figures too.", default=False),
            "fallocate": Param("bool", "Preallocate the file to `size` before T0 "
                                       "(fallocate, as fio's default fallocate=native; none "
                                       "where the file system has no fallocate, and none with "
                                       "`duration`); false: no preallocation, as IOR and dd.",
                               default=True)},
    prepare=_prepare_write, run=_run, cleanup=_cleanup, check=_check_amount, uses_dir=True,
    progress="bytes",
    publish=io_ior.publish, connect=io_ior.connect, peers_when=lambda p: bool(p.get("wear_out")),
    standalone=_standalone(True),
)

READ = Kernel(
    name="io.read",
    figures=READ_FIGURES,
    doc="Sequential reads of `block` bytes from one file per slot. A missing file is laid out "
        "before T0 (never inside the timed window), as fio does; a file an io.write task of the "
        "same run left is read as it is (extended first if shorter than `size`). Its cached "
        "pages are dropped before T0 unless cache = \"keep\" (fio's invalidate=1), so reads "
        "come from the device; records say what share of the file was cached at T0. The file "
        "gets posix_fadvise SEQUENTIAL, as fio's fadvise_hint. With `duration`, reading is "
        "time-based and wraps around at the end of the file.",
    params={**_COMMON,
            "size": Param("size", "Bytes per slot (\"1GiB\"): the file is laid out to this "
                                  "size when missing or shorter; without `duration` this many "
                                  "bytes are read."),
            "duration": Param("duration", "Time-based read: read until T0 + duration (the "
                                          "same instant for every slot), wrapping at the end "
                                          "of the file, as fio's time_based."),
            "cache": CACHE,
            "reorder": Param("bool", "Read the file the next rank wrote, one node over (IOR "
                                     "-C): rank r reads rank r+1's (order = pack: r + the "
                                     "first node's slots), so no node reads back what it "
                                     "cached while writing. Needs a file system every node "
                                     "sees.", default=False)},
    prepare=_prepare_read, run=_run, cleanup=_cleanup, check=_check_read, uses_dir=True,
    progress="bytes",
    publish=io_ior.publish, connect=io_ior.connect, peers_when=lambda p: bool(p.get("reorder")),
    standalone=_standalone(False),
)

KERNELS = [WRITE, READ]
