"""The coordinator's side of the Dask nodes' leases (node/lease.py): renew every live node's
lease every RENEW_S (protocol.Renew), so a node whose coordinator is gone stops its slots
within LEASE_S.

The renewals run on the Dask client's event loop, apart from the phase's own requests, so a
phase that runs for hours still renews. A renewal that fails is not an error here: a node
that stopped answering is found lost by the engine itself.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from ..node.protocol import Renew

LEASE_S = 10.0     # a node stops this long after the last renewal it got
RENEW_S = 2.0      # renewed this often: several renewals may be lost or late first


class LeaseRenewer:
    def __init__(self, send: Callable[[str, Renew], Awaitable[Any]],
                 live: Callable[[], list[str]], lease_s: float = LEASE_S,
                 every_s: float = RENEW_S) -> None:
        """send: (worker address, request) -> its reply; live: the live nodes' addresses."""
        self.send, self.live, self.lease_s, self.every_s = send, live, lease_s, every_s
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        await self._renew_all()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            await self._renew_all()

    async def _renew_all(self) -> None:
        async def one(addr: str) -> None:
            try:
                await asyncio.wait_for(self.send(addr, Renew(self.lease_s)), self.every_s * 2)
            except Exception:   # any transport failure: the engine finds the node lost
                pass
        await asyncio.gather(*(one(a) for a in self.live()))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
