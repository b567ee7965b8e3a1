"""The slot's file for io.* and io.rand*: where it is, how it is opened, what a phase holds."""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from types import ModuleType

from .base import KernelError, SlotContext
from .native import user_message
from .peers import Group

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
    group: Group | None = None     # wear_out: the phase's slots, to agree on the blocks
    rank: int = 0
    workers: int = 1
    reorder: bool = False          # read the next node's rank's file (IOR -C)
    cache: str = "drop"

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


def open_file(path: str, flags: int, direct: bool, kernel: str) -> int:
    # O_NOFOLLOW: a symbolic link planted in scratch must not redirect the writes elsewhere
    try:
        return os.open(path, flags | (os.O_DIRECT if direct else 0) | os.O_CLOEXEC
                       | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise KernelError(f"{kernel} {path}: is a symbolic link; files in scratch are "
                              "never opened through links") from None
        if direct and e.errno == errno.EINVAL:
            raise KernelError(f"{kernel} {path}: the file system refuses O_DIRECT (direct = "
                              "true); use direct = false or a directory on another file "
                              "system") from None
        raise KernelError(user_message(f"{kernel} {path}", e.errno or 0,
                                       f"cannot open: {e.strerror}")) from None


def slot_file(ctx: SlotContext, params: dict, kernel: str) -> str:
    """The slot's file; makes the slot's directory when missing."""
    for fld, msg in file_problems(params):
        raise KernelError(f"{kernel}: {fld}: {msg}")
    try:
        os.makedirs(ctx.scratch, exist_ok=True)
    except OSError as e:
        raise KernelError(user_message(f"{kernel} {ctx.scratch}", e.errno or 0,
                                       f"cannot create the directory: {e.strerror}")) from None
    return os.path.join(ctx.scratch, params["file"])
