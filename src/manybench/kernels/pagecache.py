"""The page cache before a read kernel's T0: dropped by default, as fio's invalidate=1, and
measured either way, so every record says whether its reads came from memory.

  cache = "drop"  fsync (dirty pages cannot be dropped), then posix_fadvise(DONTNEED) on the
                  whole file: reads go to the device (fio's default, invalidate=1)
  cache = "keep"  leave the cache as it is: reads of a just-written file come from memory
Either way `cached_fraction` = the share of the file's pages (of the part read) in the page
cache just before T0, counted with mincore; `cache_dropped` is 1 or 0.

What was read decides the label, not the state at T0: `from_memory` = 1 - the bytes the slot
fetched from storage over its run (/proc/self/io read_bytes: the kernel's own count, readahead
and O_DIRECT included, threads and waited-for children summed) / the bytes it read. A small
file read again and again is dropped at T0 and still read from memory. Where the kernel keeps
no such count, `from_memory` is the share cached at T0.
"""
from __future__ import annotations

import os
from types import ModuleType

from .base import KernelError, Param
from .figures import CACHE_DROPPED, CACHED_FRACTION, FROM_MEMORY
from .native import user_message

CACHE = Param("choice", "Page cache before T0: \"drop\" (default, as fio's invalidate=1: fsync, "
                        "then posix_fadvise DONTNEED, so reads hit the device) or \"keep\" "
                        "(reads of cached pages come from memory). Records carry "
                        "cached_fraction, the share of the file's pages cached at T0.",
              default="drop", choices=("drop", "keep"))


def prepare_cache(lib: ModuleType, fd: int, size: int, cache: str, label: str
                  ) -> dict[str, float]:
    """Drop the file's cached pages unless cache == "keep"; its metrics (see module doc)."""
    try:
        if cache == "drop":
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        resident, pages = lib.resident(fd, size) if size else (0, 0)
    except OSError as e:
        raise KernelError(user_message(label, e.errno or 0,
                                       f"before the reads (fsync, fadvise, mincore): "
                                       f"{e.strerror}")) from None
    return {CACHE_DROPPED.name: 1.0 if cache == "drop" else 0.0,
            CACHED_FRACTION.name: resident / pages if pages else 0.0}


def read_bytes() -> int | None:
    """The bytes this process has fetched from storage so far (/proc/self/io), or None."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def add_from_memory(metrics: dict, before: int | None, nbytes: int) -> None:
    """metrics["from_memory"]: the share of `nbytes` read that no device read served, from
    read_bytes() before the run and now; the share cached at T0 where there is no count."""
    after = read_bytes()
    if before is None or after is None or nbytes <= 0:
        metrics[FROM_MEMORY.name] = metrics.get(CACHED_FRACTION.name, 0.0)
        return
    metrics[FROM_MEMORY.name] = 1.0 - min(1.0, max(0, after - before) / nbytes)
