"""A node's lease on its run: the coordinator must keep renewing it, or the node stops.

A coordinator killed with SIGKILL (or cut off) sends nothing more; without a lease its nodes'
agents, slots and commands would run on for good. The Dask worker's relay (dask_plugin.py)
holds the lease from the run's Start; every request it relays and every renewal
(engines/lease.py, every few seconds) extends it; when it runs out the relay stops the agent,
which stops every slot and their children (the agent server's SIGTERM path, reaper.py's
cgroups).

A run's phases go to the agent over its direct channel, past the worker, so the agent stamps
the time of each request it gets there in a few bytes of memory it shares with the worker
(Heard). When the lease runs out the worker reads the stamp first: a request heard within the
lease's length extends it from that instant. So while phases come, the coordinator renews no
lease over Dask's RPC (a message per node every 2 s through its Dask client, the worker and
their comms), and a coordinator that is gone is still found within the lease.
"""
from __future__ import annotations

import asyncio
import mmap
import os
import struct
import tempfile
import time
from typing import Awaitable, Callable

from ..config import timing

LATE_S = 0.005            # a watch wakes this long after the lease's end (timers wake early)


_STAMP = struct.Struct("d")    # CLOCK_MONOTONIC seconds: one machine, both processes read it


class Heard:
    """When the agent last heard its run's coordinator (or its relay) on the direct channel:
    one double in memory the worker and its agent process share (a memfd both map)."""

    def __init__(self, fd: int | None = None) -> None:
        """fd None: make the memory (the worker); else map the worker's (the agent)."""
        self.fd = _shared_fd() if fd is None else fd
        self.mem = mmap.mmap(self.fd, _STAMP.size)
        self._pack = _STAMP.pack_into

    def stamp(self) -> None:
        """Heard now (the agent: one per request on the direct channel, ~0.2 us)."""
        self._pack(self.mem, 0, time.monotonic())

    def last(self) -> float:
        """The last stamp (monotonic s), 0.0 when none."""
        return _STAMP.unpack_from(self.mem, 0)[0]

    def close(self) -> None:
        """The worker's side: the fd went to the agent's process; the mapping stays."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _shared_fd() -> int:
    try:
        fd = os.memfd_create("manybench-heard", os.MFD_CLOEXEC)
    except (AttributeError, OSError):   # no memfd: an unlinked file serves as well
        f = tempfile.TemporaryFile()
        fd = os.dup(f.fileno())
        f.close()
    os.ftruncate(fd, _STAMP.size)
    return fd


class Lease:
    def __init__(self, heard: Callable[[], float] | None = None) -> None:
        """heard: when the node's agent last heard the coordinator (monotonic s; 0.0: never),
        read when the lease runs out: a later renewal the worker did not see."""
        self.heard = heard
        self.until: float | None = None     # monotonic; None: no run holds the node
        # the coordinator's lease.length, from its Start (renew) and every Renew; this
        # process's own only until then (no run holds the node: nothing to stop)
        self.length = timing("lease.length")
        self._task: asyncio.Task | None = None
        self._on_expiry: Callable[[], Awaitable[None]] | None = None
        self._wake_at: float | None = None  # when the watch wakes next (monotonic)

    def renew(self, seconds: float | None = None) -> None:
        if seconds is not None and seconds > 0:
            self.length = float(seconds)
        self.until = time.monotonic() + self.length
        # the watch sleeps to the lease's end as it was; a renewal moves the end later, and
        # one that moves it earlier (a shorter length) wakes the watch at the new end
        if self._wake_at is not None and self.until + LATE_S < self._wake_at:
            self._restart()

    def release(self) -> None:
        self.until = None

    def expired(self) -> bool:
        return self.until is not None and time.monotonic() > self.until

    def watch(self, on_expiry: Callable[[], Awaitable[None]]) -> None:
        """Start the watchdog on the running event loop (once)."""
        self._on_expiry = on_expiry
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch(on_expiry))

    def _restart(self) -> None:
        if self._task is not None and self._on_expiry is not None and not self._task.done():
            self._task.cancel()
            self._wake_at = None
            self._task = self._task.get_loop().create_task(self._watch(self._on_expiry))

    async def _watch(self, on_expiry: Callable[[], Awaitable[None]]) -> None:
        """Sleep to the lease's end and look again there, not every lease.check: renewals (every
        few seconds) only push the end on, so this wakes about once per lease length, where
        it woke the worker's event loop twice a second on every node for nothing."""
        while True:
            if self.expired() and not self._heard_since():
                self.release()
                self._wake_at = None
                await on_expiry()
                continue
            now = time.monotonic()
            wait = (timing("lease.check") if self.until is None
                    else max(0.0, self.until - now) + LATE_S)
            self._wake_at = now + wait
            await asyncio.sleep(wait)

    def _heard_since(self) -> bool:
        """The agent heard the coordinator within the lease's length: extend it from then."""
        heard = self.heard() if self.heard is not None else 0.0
        if heard + self.length <= time.monotonic():
            return False
        self.until = heard + self.length
        return True

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._wake_at = None
