"""A node's lease (node/lease.py): it runs out when nothing renews it, a renewal pushes its end
on, one that shortens it is kept to, and the watch sleeps to the lease's end instead of
waking the worker's event loop every half second."""
from __future__ import annotations

import asyncio
import time

from manybench import config
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
    # one sleep to the end, not a step of lease.check (0.5 s)
    assert waits and min(waits) > config.timing("lease.check")


def test_a_lease_run_out_is_extended_from_when_the_agent_last_heard_the_coordinator():
    """The worker's lease reads the agent's stamp when it runs out: heard within the lease's
    length, it runs on from that instant; the stamp no longer moving, it runs out there."""
    async def go():
        lease, ended, heard = L.Lease(), [], [0.0]
        lease.heard = lambda: heard[0]

        async def out():
            ended.append(time.monotonic())
        lease.renew(0.3)
        start = time.monotonic()
        lease.watch(out)
        while time.monotonic() - start < 1.0:      # heard, not renewed: past three ends
            heard[0] = time.monotonic()
            await asyncio.sleep(0.05)
        last = heard[0]
        assert not ended and lease.until is not None
        while not ended and time.monotonic() - start < 10:
            await asyncio.sleep(0.02)
        lease.stop()
        return last, ended
    last, ended = _run(go())
    assert ended and last + 0.3 <= ended[0] < last + 0.3 + 2.0


def test_the_stamp_is_shared_with_the_agents_process():
    """Heard: the agent (another process, given the fd) stamps, the worker reads."""
    import subprocess
    import sys
    heard = L.Heard()
    assert heard.last() == 0.0
    before = time.monotonic()
    code = ("import sys; from manybench.node.lease import Heard; "
            "Heard(int(sys.argv[1])).stamp()")
    subprocess.run([sys.executable, "-c", code, str(heard.fd)], pass_fds=[heard.fd],
                   check=True)
    heard.close()                              # the worker's fd: the mapping stays
    assert before <= heard.last() <= time.monotonic()
