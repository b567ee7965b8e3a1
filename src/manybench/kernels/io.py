"""`io.write` / `io.read`: sequential I/O on a per-slot file under the slot's scratch directory."""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from types import ModuleType

from .base import Kernel, KernelError, Param, Result, SlotContext
from .native import native, result_from_native, user_message
from .pagecache import CACHE, prepare_cache

ALIGN = 4096  # O_DIRECT: offsets, lengths and buffers aligned to any logical block size

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


def _check_amount(params: dict) -> list[tuple[str, str]]:
    if params.get("size") is None and params.get("duration") is None:
        return [("size", "give `size` or `duration` (or both)")]
    return []


def _check_read(params: dict) -> list[tuple[str, str]]:
    if params.get("size") is None:
        return [("size", "io.read needs `size`: the file is laid out to it when missing")]
    return []


@dataclass
class _State:
    lib: ModuleType
    fd: int
    path: str
    write: bool
    block: int
    size: int               # 0 = no size limit
    duration: float | None  # stonewall: stop at t0 + duration
    fsync_end: bool
    direct: bool
    metrics: dict = field(default_factory=dict)   # known before T0 (the page cache)

    @property
    def label(self) -> str:
        return f"io.{'write' if self.write else 'read'} {self.path}"


def _explain(st: _State, err: int, text: str) -> str:
    if err == errno.EINVAL and st.direct:
        return (f"{st.label}: {text} (direct = true: the file system refused O_DIRECT "
                f"with this block ({st.block} bytes) or does not support it; use direct = "
                "false or another directory)")
    return user_message(st.label, err, text)


def _check_direct(kernel: str, params: dict) -> None:
    bad = [f"{k} = {params[k]}" for k in ("block", "size")
           if params.get(k) is not None and params[k] % ALIGN]
    if params.get("direct") and bad:
        raise KernelError(f"{kernel}: direct = true needs block and size to be multiples of "
                          f"{ALIGN} bytes; got {', '.join(bad)}")


def _open(path: str, flags: int, direct: bool, kernel: str) -> int:
    try:
        return os.open(path, flags | (os.O_DIRECT if direct else 0) | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if direct and e.errno == errno.EINVAL:
            raise KernelError(f"{kernel} {path}: the file system refuses O_DIRECT (direct = "
                              "true); use direct = false or a directory on another file "
                              "system") from None
        raise KernelError(user_message(f"{kernel} {path}", e.errno or 0,
                                       f"cannot open: {e.strerror}")) from None


def _params(params: dict) -> dict:
    """The kernel's values with defaults filled in (a caller may leave defaults out)."""
    out = dict(params)
    for name, spec in _COMMON.items():
        if out.get(name) is None and isinstance(spec.default, (str, bool)):
            out[name] = spec.parse(spec.default)
    return out


def _where(ctx: SlotContext, params: dict, kernel: str) -> str:
    """The slot's file; makes the slot's directory when missing."""
    try:
        os.makedirs(ctx.scratch, exist_ok=True)
    except OSError as e:
        raise KernelError(user_message(f"{kernel} {ctx.scratch}", e.errno or 0,
                                       f"cannot create the directory: {e.strerror}")) from None
    return os.path.join(ctx.scratch, params["file"])


def _state(params: dict, write: bool, fd: int, path: str, lib: ModuleType) -> _State:
    duration = params.get("duration")
    # A write stops at size or at the stonewall, whichever comes first. A read with a
    # duration is time-based, as fio's time_based: size is the file's extent and reading
    # wraps at its end until the stonewall.
    size = params.get("size") or 0
    if not write and duration:
        size = 0
    return _State(lib=lib, fd=fd, path=path, write=write, block=params["block"],
                  size=size, duration=duration,
                  fsync_end=write and (params.get("fsync") or "end") == "end",
                  direct=bool(params["direct"]))


def _prepare_write(ctx: SlotContext, params: dict) -> _State:
    lib = native()
    params = _params(params)
    _check_direct("io.write", params)
    path = _where(ctx, params, "io.write")
    fd = _open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, params["direct"], "io.write")
    return _state(params, True, fd, path, lib)


def _prepare_read(ctx: SlotContext, params: dict) -> _State:
    lib = native()
    params = _params(params)
    _check_direct("io.read", params)
    path = _where(ctx, params, "io.read")
    size = params.get("size") or 0
    try:
        have = os.stat(path).st_size
    except FileNotFoundError:
        have = -1
    if have < size:  # lay out what is missing, never inside the timed window
        try:
            lib.layout(path, size, params["block"])
        except OSError as e:
            raise KernelError(user_message("io.read", e.errno or 0, e.strerror or str(e))) \
                from None
    fd = _open(path, os.O_RDONLY, params["direct"], "io.read")
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
    return st


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    deadline = t0_ns + round(st.duration * 1e9) if st.duration else 0
    d = st.lib.run_io(st.fd, st.write, st.block, st.size, deadline, st.fsync_end, st.direct,
                      t0_ns, spin_ns)
    res = result_from_native(d, lambda err, text: _explain(st, err, text))
    res.metrics.update(st.metrics)
    if st.fsync_end and d.get("fsync_ns"):
        res.metrics["fsync_us"] = d["fsync_ns"] / 1e3
    return res


def _cleanup(st: _State) -> None:
    if st.fd >= 0:
        fd, st.fd = st.fd, -1
        try:  # NFS and friends may report deferred write errors only here
            os.close(fd)
        except OSError as e:
            raise KernelError(user_message(st.label, e.errno or 0,
                                           f"closing the file: {e.strerror}")) from None


WRITE = Kernel(
    name="io.write",
    doc="Sequential writes of `block` bytes to one file per slot until `size` or `duration`. "
        "Reports bytes, ops and per-operation latency percentiles.",
    params={**_COMMON,
            "fsync": Param("choice", "fsync the file at the end, inside the timed window (as "
                                     "fio's end_fsync), or never.", default="end",
                           choices=("end", "never"))},
    prepare=_prepare_write, run=_run, cleanup=_cleanup, check=_check_amount, uses_dir=True,
)

READ = Kernel(
    name="io.read",
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
            "cache": CACHE},
    prepare=_prepare_read, run=_run, cleanup=_cleanup, check=_check_read, uses_dir=True,
)

KERNELS = [WRITE, READ]
