"""The slot's file for io.* and io.rand*: where it is, how it is opened, what a phase holds."""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from types import ModuleType

from ..node.wire_types import SlotContext
from .base import KernelError
from .native import user_message
from .peers import Group
from .scratchfs import open_below, same_file

ALIGN = 4096  # O_DIRECT: offsets, lengths and buffers aligned to any logical block size


@dataclass
class IoState:
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
    read_bytes0: int | None = None                # /proc/self/io read_bytes once cache was set
    group: Group | None = None     # wear_out: the phase's slots, to agree on the blocks
    rank: int = 0
    workers: int = 1
    reorder: bool = False          # read the next node's rank's file (IOR -C)
    cache: str = "drop"
    root: str = ""                 # the run's scratch root (a reorder's file is below it)

    @property
    def publishes(self) -> bool:
        return self.group is not None or self.reorder

    @property
    def label(self) -> str:
        return f"io.{'write' if self.write else 'read'} {self.path}"


def explain(st: IoState, err: int, text: str) -> str:
    """A failed I/O as one line (any state with label, direct and block: io.*, io.rand*)."""
    if err == errno.EINVAL and st.direct:
        return (f"{st.label}: {text} (direct = true: the file system refused O_DIRECT "
                f"with this block ({st.block} bytes) or does not support it; use direct = "
                "false or another directory)")
    return user_message(st.label, err, text)


def check_direct(kernel: str, params: dict) -> None:
    bad = [f"{k} = {params[k]}" for k in ("block", "size")
           if params.get(k) is not None and params[k] % ALIGN]
    if params.get("direct") and bad:
        raise KernelError(f"{kernel}: direct = true needs block and size to be multiples of "
                          f"{ALIGN} bytes; got {', '.join(bad)}")


def file_problems(params: dict) -> list[tuple[str, str]]:
    """`file` names a file directly inside the slot's scratch: an absolute path or `..`
    would let a plan truncate any file the user may write."""
    name = params.get("file")
    if not isinstance(name, str):
        return []
    if not name or "/" in name or "\0" in name or name in (".", ".."):
        return [("file", f"must be a plain file name inside the slot's directory (no '/', "
                         f"not '.' or '..'), got {name!r}")]
    return []


def open_file(root: str, path: str, flags: int, direct: bool, kernel: str) -> int:
    """The slot's file, by descriptor from the run's scratch root and checked
    (scratchfs.py): a symbolic link, a hard link, a FIFO or a socket planted there is a
    phase error naming it, never opened for the I/O."""
    try:
        return open_below(root, path, flags | (os.O_DIRECT if direct else 0), kernel)
    except KernelError:
        if not direct:
            raise
        try:    # O_DIRECT refused (EINVAL): say so rather than the bare errno
            os.close(open_below(root, path, flags, kernel))
        except KernelError:
            raise
        raise KernelError(f"{kernel} {path}: the file system refuses O_DIRECT (direct = "
                          "true); use direct = false or a directory on another file "
                          "system") from None


def laid_out(root: str, path: str, size: int, block: int, direct: bool, kernel: str,
             lib: ModuleType, flags: int = os.O_RDONLY) -> int:
    """A file laid out to `size` when shorter (never inside the timed window), then open
    with `flags` for the I/O: the inode used is the one laid out, both reached by
    descriptor."""
    rw = open_file(root, path, os.O_RDWR | os.O_CREAT, False, kernel)
    try:
        try:
            lib.layout(rw, path, size, block)
        except OSError as e:
            raise KernelError(user_message(kernel, e.errno or 0, e.strerror or str(e))) \
                from None
        fd = open_file(root, path, flags, direct, kernel)
        if not same_file(fd, rw):
            os.close(fd)
            raise KernelError(f"{kernel}: {path} was replaced while it was laid out")
        return fd
    finally:
        os.close(rw)


def slot_file(ctx: SlotContext, params: dict, kernel: str) -> str:
    """The slot's file's path (its directory is made, by descriptor, when it is opened)."""
    for fld, msg in file_problems(params):
        raise KernelError(f"{kernel}: {fld}: {msg}")
    return os.path.join(ctx.scratch, params["file"])
