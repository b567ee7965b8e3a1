"""The coordinator's side of the Dask nodes' leases (node/lease.py): renew every live node's
lease every lease.renew (protocol.Renew, config/), so a node whose coordinator is gone stops
its slots within lease.length; the Start sent that length first, so every node holds the
coordinator's from the start. A node that heard the coordinator on its direct channel since
the last renewal is skipped: its agent stamped that, and its worker counts the stamp as a renewal.
The first renewal goes to every node: it sets the lease's length.

The renewals run on the Dask client's event loop, apart from the phase's own requests, so a
phase that runs for hours still renews. A renewal that fails is not an error here: a node
that stopped answering is found lost by the engine itself.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from ..config import timing
from ..node.protocol import Renew


class LeaseRenewer:
    def __init__(self, send: Callable[[str, Renew], Awaitable[Any]],
                 live: Callable[[], list[str]],
                 heard: Callable[[], set[str]] = set, lease_s: float | None = None,
                 every_s: float | None = None) -> None:
        """send: (worker address, request) -> its reply; live: the live nodes' addresses;
        heard: those that heard the coordinator otherwise within every_s; lease_s, every_s:
        lease.length and lease.renew unless given."""
        self.send, self.live, self.heard = send, live, heard
        self.lease_s = timing("lease.length") if lease_s is None else lease_s
        self.every_s = timing("lease.renew") if every_s is None else every_s
        self.sent = 0               # renewals sent (tests, benchmarks)
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        await self._renew(self.live())
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            heard = self.heard()
            await self._renew([a for a in self.live() if a not in heard])

    async def _renew(self, addrs: list[str]) -> None:
        async def one(addr: str) -> None:
            try:
                await asyncio.wait_for(self.send(addr, Renew(self.lease_s)), self.every_s * 2)
            except Exception:   # any transport failure: the engine finds the node lost
                pass
        self.sent += len(addrs)
        await asyncio.gather(*(one(a) for a in addrs))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
