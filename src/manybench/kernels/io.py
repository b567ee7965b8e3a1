"""`io.write` / `io.read`: sequential I/O on a per-slot file under the slot's scratch directory."""
from __future__ import annotations

from .base import Kernel, Param, Result, SlotContext

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


def _not_yet(*a, **k) -> Result:  # replaced by the native kernels work
    raise NotImplementedError


WRITE = Kernel(
    name="io.write",
    doc="Sequential writes of `block` bytes to one file per slot until `size` or `duration`. "
        "Reports bytes, ops and per-operation latency percentiles.",
    params={**_COMMON,
            "fsync": Param("choice", "fsync the file at the end, inside the timed window (as "
                                     "fio's end_fsync), or never.", default="end",
                           choices=("end", "never"))},
    prepare=_not_yet, run=_not_yet, check=_check_amount, uses_dir=True,
)

READ = Kernel(
    name="io.read",
    doc="Sequential reads of `block` bytes from one file per slot. A missing file is laid out "
        "before T0 (never inside the timed window), as fio does; a file an io.write task of the "
        "same run left is read as it is. With `duration`, reading wraps around at the end.",
    params={**_COMMON,
            "drop_cache": Param("bool", "Drop the file's cached pages before T0 "
                                        "(posix_fadvise DONTNEED) so reads hit the device.",
                                default=False)},
    prepare=_not_yet, run=_not_yet, check=_check_read, uses_dir=True,
)
