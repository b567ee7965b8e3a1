"""`manybench worker ADDR`: this node's agent inside a Dask worker joined to that scheduler."""
from __future__ import annotations

import asyncio
import signal
import socket

import distributed.core
from distributed import Worker

from .dask_plugin import AgentPlugin

TICK_S = 5.0    # how often the worker's event loop checks itself (Dask's default: 20 ms)
STALL_S = 3.0   # a tick this late is logged as a stall (Dask's default limit)


def security(ca: str | None, cert: str | None, key: str | None):
    if not (ca or cert or key):
        return None
    from distributed.security import Security
    return Security(tls_ca_file=ca, tls_worker_cert=cert, tls_worker_key=key,
                    tls_client_cert=cert, tls_client_key=key, require_encryption=True)


async def _serve(address: str, name: str | None, slots: int | None, host: str | None,
                 sec) -> None:
    kwargs = {"security": sec} if sec else {}
    import dask   # noqa: PLC0415
    # the worker runs no tasks and no phase passes through it (the coordinator reaches the
    # agent directly): no sampling profiler (a thread waking every 10 ms), slow event-loop,
    # system and memory monitors, no disk counters, the ticks' statistics not recomputed every
    # second (a wake-up of its event loop each: every node, every second of a run); on a node
    # that runs benchmarks (and on 64 namespace nodes sharing a few cpus) idle workers must
    # stay idle
    dask.config.set({"distributed.worker.profile.enabled": False,
                     "distributed.admin.tick.interval": f"{TICK_S}s",
                     "distributed.admin.tick.cycle": "10s",
                     "distributed.admin.system-monitor.interval": "10s",
                     "distributed.admin.system-monitor.disk": False,
                     "distributed.admin.system-monitor.gil.enabled": False,
                     "distributed.worker.memory.monitor-interval": "5s"})
    # Dask logs "Event loop was unresponsive" when ticks come more than its limit (3 s) apart,
    # a limit read once, when distributed.core is imported: with ticks 5 s apart every tick
    # was logged as a 5 s stall, which misled more than one diagnosis. A stall is still told
    # when it delays a tick by 3 s.
    distributed.core.tick_maximum_delay = TICK_S + STALL_S
    name = name or socket.gethostname().split(".")[0]   # records name nodes by host
    # listen with the scheduler's scheme (tls:// when the cluster is secured)
    protocol = address.split("://", 1)[0] if "://" in address else "tcp"
    worker = Worker(address, name=name, nthreads=1, host=host, protocol=protocol,
                    plugins=(AgentPlugin(slots, name),), **kwargs)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.close()))
    await worker
    await worker.finished()


def run_worker(address: str, name: str | None = None, slots: int | None = None,
               host: str | None = None, ca: str | None = None, cert: str | None = None,
               key: str | None = None) -> None:
    asyncio.run(_serve(address, name, slots, host, security(ca, cert, key)))
