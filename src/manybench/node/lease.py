"""A node's lease on its run: the coordinator must keep renewing it, or the node stops.

A coordinator killed with SIGKILL (or cut off) sends nothing more; without a lease its nodes'
agents, slots and commands would run on for good. The Dask worker's relay (dask_plugin.py)
holds the lease from the run's Start; every request and every renewal (engines/lease.py, every
few seconds) extends it; when it runs out the relay stops the agent, which stops every slot
and their children (the agent server's SIGTERM path, reaper.py's cgroups).
"""
from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

DEFAULT_LEASE_S = 15.0    # until the coordinator's first renewal names its own length
CHECK_S = 0.5


class Lease:
    def __init__(self) -> None:
        self.until: float | None = None     # monotonic; None: no run holds the node
        self.length = DEFAULT_LEASE_S
        self._task: asyncio.Task | None = None

    def renew(self, seconds: float | None = None) -> None:
        if seconds is not None and seconds > 0:
            self.length = float(seconds)
        self.until = time.monotonic() + self.length

    def release(self) -> None:
        self.until = None

    def expired(self) -> bool:
        return self.until is not None and time.monotonic() > self.until

    def watch(self, on_expiry: Callable[[], Awaitable[None]]) -> None:
        """Start the watchdog on the running event loop (once)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch(on_expiry))

    async def _watch(self, on_expiry: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(CHECK_S)
            if self.expired():
                self.release()
                await on_expiry()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
