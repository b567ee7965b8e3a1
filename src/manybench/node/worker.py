"""`manybench worker ADDR`: this node's agent inside a Dask worker joined to that scheduler;
`manybench scheduler`: a Dask scheduler for them. Both secured with the cluster's
credentials (mutual TLS) unless started --insecure, and both listening only where they
must: the worker on the interface that routes to its scheduler (or --host), the scheduler
on this host's address (or --host), their HTTP servers serving a health check and nothing
else (Dask's serve its cluster's state to anyone who asks, TLS or not).
"""
from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import sys
import tempfile

import dask
import distributed.core
from distributed import Worker

from ..config import timing
from .dask_plugin import AgentPlugin

HTTP_ROUTES = ["distributed.http.health"]    # what a node's HTTP server answers: "ok"


class WorkerError(Exception):
    """A worker that cannot start as asked; the message says why and what to do."""


def security(files: tuple[str, str, str] | None):
    """Dask's Security for (ca, cert, key) in every role, encryption required; None:
    --insecure."""
    if files is None:
        return None
    from distributed.security import Security
    ca, cert, key = files
    return Security(tls_ca_file=ca, tls_worker_cert=cert, tls_worker_key=key,
                    tls_client_cert=cert, tls_client_key=key, tls_scheduler_cert=cert,
                    tls_scheduler_key=key, require_encryption=True)


def address_for(address: str, secured: bool) -> str:
    """The scheduler's address in the scheme this node speaks; WorkerError when it says
    the other."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        return f"{'tls' if secured else 'tcp'}://{address}"
    if secured and scheme != "tls":
        raise WorkerError(f"{address}: this node is secured, so its scheduler is reached at "
                          f"tls://{rest}; or start it with --insecure to join an unsecured one")
    if not secured and scheme == "tls":
        raise WorkerError(f"{address} is a TLS scheduler: give the cluster's credentials "
                          "(--credentials DIR), not --insecure")
    return address


def route_to(address: str) -> str:
    """This host's address on the interface that routes to `address`'s host."""
    from distributed.comm import get_address_host
    from distributed.utils import get_ip
    try:
        return get_ip(get_address_host(address))
    except (OSError, ValueError):
        return "127.0.0.1"


def _quiet_config() -> None:
    # the worker runs no tasks and no phase passes through it (the coordinator reaches the
    # agent directly): no sampling profiler (a thread waking every 10 ms), slow event-loop,
    # system and memory monitors, no disk counters, the ticks' statistics not recomputed every
    # second (a wake-up of its event loop each: every node, every second of a run); on a node
    # that runs benchmarks (and on 64 namespace nodes sharing a few cpus) idle workers must
    # stay idle
    tick_s = timing("node.tick")     # Dask's default: 20 ms
    dask.config.set({"distributed.worker.profile.enabled": False,
                     "distributed.admin.tick.interval": f"{tick_s}s",
                     "distributed.admin.tick.cycle": "10s",
                     "distributed.admin.system-monitor.interval": "10s",
                     "distributed.admin.system-monitor.disk": False,
                     "distributed.admin.system-monitor.gil.enabled": False,
                     "distributed.worker.memory.monitor-interval": "5s",
                     "distributed.worker.http.routes": HTTP_ROUTES,
                     "distributed.scheduler.http.routes": HTTP_ROUTES})
    # Dask logs "Event loop was unresponsive" when ticks come more than its limit (3 s) apart,
    # a limit read once, when distributed.core is imported: with ticks 5 s apart every tick
    # was logged as a 5 s stall, which misled more than one diagnosis. A stall is still told
    # when it delays a tick by 3 s.
    distributed.core.tick_maximum_delay = tick_s + timing("node.tick_stall")


async def _serve(address: str, name: str | None, slots: int | None, host: str, sec,
                 workdir: str) -> None:
    kwargs = {"security": sec} if sec else {}
    _quiet_config()
    name = name or socket.gethostname().split(".")[0]   # records name nodes by host
    protocol = address.split("://", 1)[0]
    # local_directory: a fresh owner-only one of ours, not Dask's shared, predictable
    # $TMPDIR/dask-scratch-space, where another user can plant links at its lock files
    worker = Worker(address, name=name, nthreads=1, host=host, protocol=protocol,
                    local_directory=workdir, dashboard=False,
                    plugins=(AgentPlugin(slots, name),), **kwargs)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.close()))
    await worker
    await worker.finished()


def run_worker(address: str, name: str | None = None, slots: int | None = None,
               host: str | None = None, files: tuple[str, str, str] | None = None) -> None:
    """files: the cluster's (ca, cert, key); None: --insecure."""
    address = address_for(address, files is not None)
    workdir = tempfile.mkdtemp(prefix="manybench-worker-")
    try:
        asyncio.run(_serve(address, name, slots, host or route_to(address), security(files),
                           workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


async def _schedule(host: str, port: int, sec) -> None:
    from distributed import Scheduler
    _quiet_config()
    kwargs = {"security": sec, "protocol": "tls"} if sec else {"protocol": "tcp"}
    sched = Scheduler(host=host, port=port, dashboard=False, dashboard_address=f"{host}:0",
                      **kwargs)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(sched.close()))
    await sched
    print(f"Scheduler at: {sched.address}", file=sys.stderr, flush=True)
    await sched.finished()


def run_scheduler(host: str | None, port: int, files: tuple[str, str, str] | None) -> None:
    """A scheduler on host:port (host: this host's address); files as run_worker's."""
    asyncio.run(_schedule(host or this_host(), port, security(files)))


def this_host() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
