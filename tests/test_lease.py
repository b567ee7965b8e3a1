"""A node's lease (node/lease.py): it runs out when nothing renews it, a renewal pushes its end
on, one that shortens it is kept to, and the watch sleeps to the lease's end instead of
waking the worker's event loop every half second."""
from __future__ import annotations

import asyncio
import time

from manybench.node import lease as L


def _run(coro):
    return asyncio.run(coro)


def test_the_lease_runs_out_when_nothing_renews_it_and_renewals_push_it_on():
    async def go():
        lease, ended = L.Lease(), []

        async def out():
            ended.append(time.monotonic())
        lease.renew(0.3)
        start = time.monotonic()
        lease.watch(out)
        for _ in range(4):              # renewed past its first end
            await asyncio.sleep(0.1)
            lease.renew()
        assert not ended
        while not ended:
            await asyncio.sleep(0.02)
        lease.stop()
        return start, ended[0], lease.until
    start, end, until = _run(go())
    assert end - start >= 0.4 + 0.3 - 0.05 and until is None


def test_a_renewal_that_shortens_the_lease_is_kept_to():
    async def go():
        lease, ended = L.Lease(), []

        async def out():
            ended.append(time.monotonic())
        lease.renew(30.0)
        lease.watch(out)
        await asyncio.sleep(0.05)       # the watch sleeps toward the 30 s end
        start = time.monotonic()
        lease.renew(0.2)
        while not ended and time.monotonic() - start < 5:
            await asyncio.sleep(0.02)
        lease.stop()
        return start, ended
    start, ended = _run(go())
    assert ended and ended[0] - start < 5


def test_the_watch_sleeps_to_the_leases_end_not_in_steps(monkeypatch):
    waits = []
    real = asyncio.sleep

    async def sleep(s, *a):
        waits.append(s)
        await real(0)
    monkeypatch.setattr(L.asyncio, "sleep", sleep)

    async def go():
        lease = L.Lease()

        async def out():
            pass
        lease.renew(10.0)
        lease.watch(out)
        for _ in range(3):
            await real(0)
        lease.stop()
    _run(go())
    assert waits and min(waits) > L.CHECK_S      # one sleep to the end, not a step of 0.5 s
