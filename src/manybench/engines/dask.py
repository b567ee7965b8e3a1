"""Nodes reached through a Dask cluster: one agent per Dask worker, one message per node per
phase each way, clocks corrected by Cristian's algorithm.

Dask finds, starts, watches and stops the nodes: the coordinator calls each worker's
`mb_call` handler (distributed's rpc pool, so the cluster's TLS applies) for Info, the
noise floor, the run's Start (which hands each agent the run's secret), lease renewals,
Close and Abort. A run's phases go straight to each agent over its direct channel
(engines/direct.py, node/direct.py: no worker, no scheduler on the path), or through the
worker's handler for a node that cannot be reached directly (a `relay` warning says why).
Requests and replies are the typed messages of node/protocol.py, each encoded with the
protocol version; the first, Info, finds a node of another version, or one whose cpu cannot
run the build (build_isa.py), and refuses it by name before anything else: no noise floor
is measured for a run refused, no agent started only to refuse its Start. Phases get a
Prepare first, so T0 is chosen only when every node is ready, unless base.with_go says the
phase may travel with Run.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import time
from typing import Any, Callable

from ..config import timing
from ..results.contract import WarningKind
from ..node.clock import measure_offset
from ..security import auth
from ..node.protocol import (Abort, Close, Failed, Info, MeasureNoise, Member, NodeInfo,
                             Ping, ProtocolMismatch, Request, Start, Started,
                             decode, encode)
from . import floors
from .access import INSECURE_TEXT, Access
from .base import EngineConfig, EngineError, Node
from .channels import ChannelEngine
from .direct import DirectRefused, Fanout, NodeLost, connect, refusal
from .lease import LeaseRenewer

# what waiting on the client's event loop raises when the answer does not come
STUCK = (cf.TimeoutError, cf.CancelledError, RuntimeError)


class DaskEngine(ChannelEngine):
    def __init__(self, client: Any, slots: dict[str, int] | None = None,
                 default_slots: int | None = None, on_close: Callable[[], None] | None = None,
                 expected: int | None = None, host_names: dict[str, str] | None = None,
                 access: Access | None = None, config: EngineConfig = EngineConfig()) -> None:
        """client: a connected distributed.Client. slots: per-node slot counts (hostfile or
        allocation) by node name; default_slots: --slots for every node; expected: wait for
        this many workers; host_names: worker host -> node name (hostfile names); access:
        how the cluster is secured (access.py; None: as the client's security says); config:
        the run's (base.EngineConfig)."""
        super().__init__(Fanout(self._relay), config)
        self.client = client
        self.slots_by_name = slots or {}
        self.default_slots = default_slots
        self.on_close = on_close
        self.expected = expected
        self.host_names = host_names or {}
        self.access = access or Access.of_client(client)
        self.addr: dict[str, str] = {}      # node -> worker address
        self.echo: dict[str, tuple[str, int]] = {}
        self.secret = auth.new_secret()      # the run's: only we drive its agents
        self.call_key = auth.derive(self.secret, "call")

    # -- plumbing: coroutines on the client's event loop -----------------------------
    def _submit(self, coro: Any) -> cf.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.client.loop.asyncio_loop)

    async def _send(self, addr: str, req: Request, who: str) -> Any:
        """One request to the worker at addr, its reply decoded (ProtocolMismatch: the node
        speaks another version). Every request to a node goes through here."""
        kind, data = type(req).__name__, encode(req)
        raw = await self.client.rpc(addr).mb_call(kind=kind, request=data, tag=self._tag(kind, data))
        return decode(raw, who)

    def _tag(self, kind: str, data: bytes) -> bytes:
        """Every request's HMAC under the run's key: the node acts on nothing else."""
        return auth.tag(self.call_key, kind.encode(), data)

    async def _call(self, node: str, req: Request) -> Any:
        try:
            reply = await self._send(self.addr[node], req, f"node {node}")
        except ProtocolMismatch:
            raise
        except Exception as e:   # comm closed, worker gone, refused: the node is lost
            raise NodeLost(f"node {node} lost: {type(e).__name__}: {e}") from None
        if isinstance(reply, Failed):
            raise RuntimeError(f"node {node}: {reply.error}")
        return reply

    async def _all(self, reqs: dict[str, Request]) -> dict[str, Any]:
        names = list(reqs)
        out = await asyncio.gather(*(self._call(n, reqs[n]) for n in names),
                                   return_exceptions=True)
        return dict(zip(names, out))

    def _wait_all(self, reqs: dict[str, Request]) -> dict[str, Any]:
        return self._submit(self._all(reqs)).result()

    def _relay(self, node: str, kind: str, data: bytes) -> cf.Future:
        """A request through the node's worker (no direct channel): its reply's bytes."""
        return self._submit(self.client.rpc(self.addr[node]).mb_call(
            kind=kind, request=data, tag=self._tag(kind, data)))

    # -- start: discover nodes, their slots and clocks ---------------------------------
    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        try:
            return self._start(run, slots, default_dir, keep)
        except BaseException:
            # a start that fails part way (a node refused, a worker missing, Ctrl-C) ends
            # what it began: the agents started are aborted and the cluster this engine made
            # closed, its credentials removed from the hosts (on_close); no run owns them
            try:
                self.abort()
            except Exception:       # noqa: BLE001 (the start's own error is the one to tell)
                pass
            raise

    def _start(self, run: str, slots: int | None, default_dir: str, keep: bool) -> list[Node]:
        if self.expected:
            self.client.wait_for_workers(self.expected, timeout=timing("engines.workers_wait"))
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        infos = self._submit(self._infos(list(workers))).result()
        refused = [str(e) for e in infos.values() if isinstance(e, ProtocolMismatch)]
        if refused:       # before anything else: nothing more is asked of any node
            raise EngineError("; ".join(refused))
        cpu_refused = []
        for addr, info in infos.items():
            if isinstance(info, Exception):
                raise EngineError(f"Dask worker {addr} has no manybench agent ({info}); start "
                                  "workers with `manybench worker ADDR` or --preload "
                                  "manybench.node.dask_plugin")
            name = self.host_names.get(info.host, info.node)
            while name in self.addr:          # two workers on one host: keep them apart
                name = f"{name}+"
            n = self.slots_by_name.get(name) or slots or self.default_slots or info.slots
            self.addr[name] = addr
            self.echo[name] = (info.host, info.echo_port)
            self.nodes.append(Node(name, n, tuple(info.cpus), machine=info.machine,
                                   host=info.host, inventory=info.inventory))
            if info.refused:
                cpu_refused.append(f"node {name}: {info.refused}")
        if cpu_refused:     # its agent would refuse the Start: no node measures its noise first
            raise EngineError("; ".join(sorted(cpu_refused)))
        if not self.nodes:
            raise EngineError("the Dask cluster has no workers")
        for n in self.nodes:      # the report's header names it (report/header.py)
            n.inventory["security"] = self.access.describe()
        if self.access.insecure:
            self.add_warning(WarningKind.INSECURE, "", INSECURE_TEXT)
        self.open_files_for(len(self.nodes))
        self.nodes.sort(key=lambda n: n.name)
        if self.config.noise_s > 0:
            self._submit(self._noise()).result()
        replies = self._wait_all({n.name: Start(run, n.name, n.slots, default_dir, keep,
                                                self.config.telemetry_s, secret=self.secret,
                                                host=n.host, lease_s=timing("lease.length"),
                                                kill_grace_s=timing("node.kill_grace"))
                                  for n in self.nodes})
        for name, r in replies.items():
            if isinstance(r, Exception):      # its text names the node (_call)
                raise EngineError(f"{r}")
            if not isinstance(r, Started):
                raise EngineError(f"node {name} answered its Start with {type(r).__name__}")
        self._go_direct(replies)
        self._form_groups(replies)
        self.sync_clocks()       # relays measure their members' clocks (engines/relays.py)
        # warm the path (connections, first encoding) and time it: the first lead is the
        # slowest node's round trip to its slots plus a round trip to the nodes
        for _ in range(3):
            t = time.monotonic_ns()
            for name, r in self._round({n.name: Ping() for n in self.nodes}).items():
                if isinstance(r, Exception):
                    raise EngineError(f"node {name} does not answer after its start: {r}")
            rpc = time.monotonic_ns() - t
        self.dispatch_hint_ns = max(r.dispatch_ns for r in replies.values()) + rpc
        self.renewer = LeaseRenewer(lambda a, req: self._send(a, req, f"worker {a}"), lambda: [
            self.addr[n.name] for n in self.nodes if n.name not in self.lost],
            self._heard_lately)
        self._submit(self.renewer.start()).result()
        return self.nodes

    def _heard_lately(self) -> set[str]:
        """The workers whose node answered a round sent within the renewal period: the node
        heard us since, which its worker's lease counts (node/lease.py), so no renewal goes
        to it over Dask's RPC (a message per node every 2 s) while phases come."""
        sent_at, replies = self.fanout.answered
        if time.monotonic() - sent_at >= self.renewer.every_s:
            return set()
        return {self.addr[n] for n, r in replies.items() if not isinstance(r, BaseException)}

    def _go_direct(self, started: dict[str, Started]) -> None:
        """Open each node's direct channel where it offers one and the cluster's security
        allows; a node without one keeps the worker's relay and the run is told why."""
        sec = getattr(self.client, "security", None)
        secured = bool(getattr(sec, "require_encryption", False)) or str(
            getattr(getattr(self.client, "scheduler", None), "address", "")).startswith("tls")
        ctx = None
        if sec is not None:
            ctx = sec.get_connection_args("client").get("ssl_context")

        def open_one(n: Node) -> tuple[Any, str]:
            offer = started[n.name].direct
            why = refusal(offer, started[n.name].why, secured, ctx)
            if why:
                return None, why
            try:
                return connect(n.host, offer, self.secret, ctx, f"node {n.name}"), ""
            except (OSError, EOFError, DirectRefused, ProtocolMismatch, ValueError) as e:
                return None, f"its direct channel ({n.host}:{offer.port}) failed: {e}"
        # at once: a firewall that drops the connections costs one timeout, not one per node
        with cf.ThreadPoolExecutor(max_workers=min(64, len(self.nodes))) as pool:
            opened = list(pool.map(open_one, self.nodes))
        for n, (sock, why) in zip(self.nodes, opened):
            if sock is not None:
                self.fanout.add(n.name, sock)
                n.inventory["channel"] = "direct, TLS" if started[n.name].direct.tls else "direct"
                continue
            n.inventory["channel"] = "relay"
            self.add_warning(WarningKind.RELAY, n.name, f"node {n.name} is reached through its Dask worker's "
                      f"relay, not directly: {why}; each of its phases costs more there")

    async def _noise(self) -> None:
        """Each node's noise floor (inventory/noise.py) into its inventory: one measurement
        per machine and cpus, taken by the other nodes there, which it names; machines at
        once, groups of one machine whose cpus overlap one after another (floors.py)."""
        async def one_chain(groups: list[floors.Group]) -> None:
            for group in groups:
                floor = None
                for by in group:     # the probe failed there (node lost): the next measures
                    try:
                        got = await self._call(by.name, MeasureNoise(self.config.noise_s))
                    except (NodeLost, RuntimeError):
                        continue
                    floor = floors.shared(got.floor, group, by)
                    break
                for n in group:
                    n.inventory["noise"] = floor
        await asyncio.gather(*(one_chain(c) for c in floors.chains(self.nodes)))

    async def _infos(self, addrs: list[str]) -> dict[str, NodeInfo | Exception]:
        async def one(a: str) -> NodeInfo | Exception:
            try:
                got = await self._send(a, Info(), f"Dask worker {a}")
            except Exception as e:   # no manybench there, another version, gone
                return e
            return RuntimeError(got.error) if isinstance(got, Failed) else got
        return dict(zip(addrs, await asyncio.gather(*(one(a) for a in addrs))))

    def _form_groups(self, started: dict[str, Started]) -> None:
        self.form_groups({n.name: Member(n.host, started[n.name].direct.port,
                                         started[n.name].direct.tls, self.echo[n.name][1])
                          for n in self.nodes if self.fanout.direct(n.name)})

    def sync_clocks(self) -> None:
        key = auth.derive(self.secret, "echo")
        self.compose_clocks(lambda n: measure_offset(*self.echo[n.name], key))

    def _check_workers(self) -> None:
        """A worker the scheduler has dropped is lost even if its socket has not closed.
        The scheduler's threads per worker name every worker it holds in a few bytes each:
        scheduler_info described each one whole (its metrics, services...), every 2 s of
        a run, a large message at 64 nodes for the scheduler to make and this one to read."""
        try:
            alive = set(self.client.nthreads())
        except Exception:
            return
        for n in self.work:
            if self.addr[n] not in alive and n not in self.lost:
                self._lose(n, NodeLost(f"node {n} lost: its Dask worker left the cluster"))

    # -- the end ---------------------------------------------------------------------
    def _finish(self, request: Request) -> None:
        """Close or Abort every live node. A node that does not confirm it is told as a
        `cleanup` warning (take_warnings): its slots stop when its lease runs out, but its
        scratch may remain."""
        try:
            if getattr(self, "renewer", None) is not None:
                try:   # the nodes' leases are released by Close / Abort below
                    self._submit(self.renewer.stop()).result(timeout=5)
                except STUCK as e:
                    self.add_warning(WarningKind.CLEANUP, "", f"the lease renewals did not stop ({e!r})")
            live = {n.name: request for n in self.nodes if n.name not in self.lost}
            try:
                got = (self._submit(self._all(live)).result(timeout=timing("engines.close"))
                       if live else {})
            except STUCK as e:
                got = {n: e for n in live}
            for n, r in got.items():
                if isinstance(r, BaseException):
                    self.add_warning(WarningKind.CLEANUP, n, f"node {n} did not confirm the run's end "
                              f"({type(request).__name__}: {str(r) or type(r).__name__}): its "
                              "slots stop when its lease runs out; its scratch may remain")
        finally:
            on_close, self.on_close = self.on_close, None     # once: a failed start aborts,
            if on_close:                                      # and a Ctrl-C then aborts again
                on_close()

    def close(self) -> None:
        try:
            self._finish(Close())
        finally:
            self.fanout.close()

    def abort(self) -> None:
        self.fanout.abandon()
        self.pending = False
        try:
            self._finish(Abort())
        finally:
            self.fanout.close()
