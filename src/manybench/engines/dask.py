"""Nodes reached through a Dask cluster: one agent per Dask worker, one message per node per
phase each way, clocks corrected by Cristian's algorithm.

Dask finds, starts, watches and stops the nodes: the coordinator calls each worker's
`mb_call` handler (distributed's rpc pool, so the cluster's TLS applies) for Info, the
noise floor, the run's Start (which hands each agent the run's secret), lease renewals,
Close and Abort. A run's phases go straight to each agent over its direct channel
(engines/direct.py, node/direct.py: no worker, no scheduler on the path), or through the
worker's handler for a node that cannot be reached directly (a `relay` warning says why).
Requests and replies are the typed messages of node/protocol.py, each encoded with the
protocol version; the first, Info, finds a node of another version and refuses it by name
before anything else. Phases get a Prepare first, so T0 is chosen only when every node is
ready, unless base.with_go says the phase may travel with Run.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import secrets
import time
from typing import Any, Callable

from ..kernels import Result
from ..node.arrays import SlotResults
from ..node.clock import measure_offset
from ..node.protocol import (Abort, Close, CommandsDone, Connect, Connected, Failed, Finished,
                             Info, MeasureNoise, Member, NodeInfo, NoiseFloor, Ping, Prepare,
                             Prepared, ProtocolMismatch, Request, Run, RunCommands, SnapshotTaken,
                             Start, Started, TakeSnapshot, WirePhase, decode, encode)
from .base import Engine, EngineError, Node, Work, with_go
from .direct import DirectRefused, Fanout, NodeLost, connect, refusal
from .lease import LeaseRenewer
from .relays import form_groups, relay_clocks

LOST_GRACE_S = 30.0           # a node silent this long past a task's timeout is lost
CLOSE_S = 30.0                # every node's answer to Close / Abort within this
# what waiting on the client's event loop raises when the answer does not come
STUCK = (cf.TimeoutError, cf.CancelledError, RuntimeError)
# how often a phase still waiting asks the scheduler which workers it has: the answer
# describes every worker (64 nodes: a large message), so not at every 0.2 s poll
CHECK_WORKERS_S = 2.0


class DaskEngine(Engine):
    def __init__(self, client: Any, slots: dict[str, int] | None = None,
                 default_slots: int | None = None, on_close: Callable[[], None] | None = None,
                 expected: int | None = None, host_names: dict[str, str] | None = None) -> None:
        """client: a connected distributed.Client. slots: per-node slot counts (hostfile or
        allocation) by node name; default_slots: --slots for every node; expected: wait for
        this many workers; host_names: worker host -> node name (hostfile names)."""
        self.client = client
        self.slots_by_name = slots or {}
        self.default_slots = default_slots
        self.on_close = on_close
        self.expected = expected
        self.host_names = host_names or {}
        self.rows: dict[str, list] = {}     # telemetry received with results, not yet taken
        self.nodes: list[Node] = []
        self.addr: dict[str, str] = {}      # node -> worker address
        self.echo: dict[str, tuple[str, int]] = {}
        self.lost: dict[str, str] = {}      # node -> why
        self.notices: list[str] = []        # slots replaced on nodes (Engine.take_notices)
        self.pending = False                # a phase's Run sent, its replies not all in
        self.deadline: float | None = None
        self.work: Work = {}
        self.phase: WirePhase | None = None
        self.prepared = False
        self.failed: dict[str, dict[int, Result]] = {}
        self.done: dict[str, SlotResults] = {}
        self.checked = 0.0                  # monotonic time of the last _check_workers
        self.secret = secrets.token_hex(16)     # the run's: only we drive its agents
        self.fanout = Fanout(self._relay)

    # -- plumbing: coroutines on the client's event loop -----------------------------
    def _submit(self, coro: Any) -> cf.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.client.loop.asyncio_loop)

    async def _send(self, addr: str, req: Request, who: str) -> Any:
        """One request to the worker at addr, its reply decoded (ProtocolMismatch: the node
        speaks another version). Every request to a node goes through here."""
        raw = await self.client.rpc(addr).mb_call(kind=type(req).__name__, request=encode(req))
        return decode(raw, who)

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
        return self._submit(self.client.rpc(self.addr[node]).mb_call(kind=kind, request=data))

    def _round(self, reqs: dict[str, Request]) -> dict[str, Any]:
        """One request to each node, direct or relayed: every reply (or why there is none)."""
        self.fanout.send(reqs)
        self.fanout.wait(None)
        return self.fanout.replies

    # -- start: discover nodes, their slots and clocks ---------------------------------
    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        if self.expected:
            self.client.wait_for_workers(self.expected, timeout=600)
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        infos = self._submit(self._infos(list(workers))).result()
        refused = [str(e) for e in infos.values() if isinstance(e, ProtocolMismatch)]
        if refused:       # before anything else: nothing more is asked of any node
            raise EngineError("; ".join(refused))
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
        if not self.nodes:
            raise EngineError("the Dask cluster has no workers")
        self.nodes.sort(key=lambda n: n.name)
        if self.noise_s > 0:
            self._submit(self._noise()).result()
        replies = self._wait_all({n.name: Start(run, n.name, n.slots, default_dir, keep,
                                                self.telemetry_s, secret=self.secret)
                                  for n in self.nodes})
        for name, r in replies.items():
            if not isinstance(r, Started):
                raise EngineError(f"starting the agent on {name}: {r}")
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
            self.addr[n.name] for n in self.nodes if n.name not in self.lost])
        self._submit(self.renewer.start()).result()
        return self.nodes

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
            self.tell("relay", n.name, f"node {n.name} is reached through its Dask worker's "
                      f"relay, not directly: {why}; each of its phases costs more there")

    async def _noise(self) -> None:
        """Each node's noise floor (inventory/noise.py) into its inventory: machines at once,
        nodes sharing a machine one after another (they would measure each other)."""
        by_machine: dict[str, list[Node]] = {}
        for n in self.nodes:
            by_machine.setdefault(n.machine or n.name, []).append(n)

        async def one_machine(nodes: list[Node]) -> None:
            for n in nodes:
                try:
                    got = await self._call(n.name, MeasureNoise(self.noise_s))
                except (NodeLost, RuntimeError):   # the probe failed there: no floor
                    got = NoiseFloor(None)
                n.inventory["noise"] = got.floor
        await asyncio.gather(*(one_machine(ns) for ns in by_machine.values()))

    async def _infos(self, addrs: list[str]) -> dict[str, NodeInfo | Exception]:
        async def one(a: str) -> NodeInfo | Exception:
            try:
                got = await self._send(a, Info(), f"Dask worker {a}")
            except Exception as e:   # no manybench there, another version, gone
                return e
            return RuntimeError(got.error) if isinstance(got, Failed) else got
        return dict(zip(addrs, await asyncio.gather(*(one(a) for a in addrs))))

    def _form_groups(self, started: dict[str, Started]) -> None:
        """Relays for the largest runs (engines/relays.py: when, and who relays whom); how
        each node is reached goes in its inventory."""
        on_own = {n.name: Member(n.host, started[n.name].direct.port, started[n.name].direct.tls,
                                 self.echo[n.name][1])
                  for n in self.nodes if self.fanout.direct(n.name)}
        formed, left = form_groups(self.fanout, on_own, self.per_relay)
        by_name = {n.name: n for n in self.nodes}
        for relay, members in formed.items():
            by_name[relay].inventory["relay_for"] = members
            for m in members:
                by_name[m].inventory["channel"] = f"through relay {relay}"
        for m, why in left.items():
            self.tell("fanout", m, f"node {m} is reached on its own channel, not through a "
                      f"relay: {why}")

    def sync_clocks(self) -> None:
        """Re-estimate every live node's clock offset (Cristian, best of many exchanges):
        relays measure their members (one round), the coordinator the relays and every
        other node; a member's offset is its relay's plus its own against the relay, and so
        is its bound."""
        through, lost = relay_clocks(self.fanout)
        for name, err in lost.items():
            self._lose(name, err)
        for n in self.nodes:
            if n.name in self.lost or n.name in through or n.name in self.fanout.via:
                continue
            host, port = self.echo[n.name]
            try:
                o = measure_offset(host, port)
            except OSError as e:
                self.lost[n.name] = f"node {n.name} lost: clock echo failed: {e}"
                continue
            n.offset_ns, n.error_ns = o.offset_ns, o.error_ns
        by_name = {n.name: n for n in self.nodes}
        for name, relay in self.fanout.via.items():
            if name in self.lost:
                continue
            if relay in self.lost or name not in through:
                self._lose(name, NodeLost(f"node {name} lost: its relay {relay} was lost"))
                continue
            _, offset, error = through[name]
            node, r = by_name[name], by_name[relay]
            node.offset_ns, node.error_ns = r.offset_ns + offset, r.error_ns + error

    # -- one phase ----------------------------------------------------------------------
    def _prepare(self, phase: WirePhase, work: Work, tick: Callable[[], None]
                 ) -> dict[str, dict[int, dict]]:
        self.phase, self.work, self.done, self.failed = phase, work, {}, {}
        self.prepared = not with_go(phase)
        published: dict[str, dict[int, dict]] = {}
        if self.prepared:
            replies = self._live_round(lambda n: Prepare(phase, work[n]), tick)
            for n, r in replies.items():
                self.failed[n], published[n] = dict(r.failed), r.published
                self.notices += r.notices
        return published

    def _connect(self, peers: dict[int, dict], tick: Callable[[], None]) -> None:
        for n, r in self._live_round(lambda n: Connect(peers), tick).items():
            self.failed[n] = {**self.failed.get(n, {}), **dict(r.failed)}

    def _live_round(self, request: Callable[[str], Request],
                    tick: Callable[[], None]) -> dict[str, Prepared | Connected]:
        """One request to every live node of the phase, ticking the progress bar while the
        replies come; a node that fails to answer is lost. The answers of the others."""
        live = [n for n in self.work if n not in self.lost]
        if not live:
            return {}
        self.fanout.send({n: request(n) for n in live})
        while not self.fanout.wait(0.2):
            tick()
        out = {}
        for n, r in self.fanout.replies.items():
            if isinstance(r, Exception):
                self._lose(n, r)
            else:
                out[n] = r
        return out

    def _go(self, t0_by_node: dict[str, int]) -> None:
        phase = None if self.prepared else self.phase
        reqs: dict[str, Request] = {n: Run(t0_by_node[n], self.work[n], phase)
                                    for n in self.work if n not in self.lost}
        self.deadline = None
        timeout = self.phase.task.timeout if self.phase else None
        if timeout is not None:
            lead = max(0.0, (self.t0_ns - time.time_ns()) / 1e9)
            self.deadline = time.monotonic() + lead + timeout + LOST_GRACE_S
        self.fanout.send(reqs)
        self.pending = bool(reqs)

    def poll(self, timeout: float) -> bool:
        if not self.pending:
            return True
        if not self.fanout.wait(timeout):
            if self.deadline is not None and time.monotonic() > self.deadline:
                for n in list(self.fanout.waiting):
                    self._lose(n, NodeLost(f"node {n} lost: no answer past the timeout"))
            elif time.monotonic() - self.checked >= CHECK_WORKERS_S:
                self.checked = time.monotonic()
                self._check_workers()
            if not self.fanout.wait(0):
                return False
        self.pending = False
        for n, r in self.fanout.replies.items():
            if isinstance(r, Finished):
                self.done[n] = r.results
                self.notices += r.notices
                self.rows.setdefault(n, []).extend(r.telemetry)
            else:
                self._lose(n, r)
        return True

    def _check_workers(self) -> None:
        """A worker the scheduler has dropped is lost even if its socket has not closed."""
        try:
            alive = set(self.client.scheduler_info(n_workers=-1)["workers"])
        except Exception:
            return
        for n in self.work:
            if self.addr[n] not in alive and n not in self.lost:
                self._lose(n, NodeLost(f"node {n} lost: its Dask worker left the cluster"))

    # -- between phases: setup, teardown, provenance ------------------------------------
    def _every_live_node(self, req: Request) -> dict[str, Any]:
        """The same request to every live node at once; who does not answer is lost."""
        live = [n.name for n in self.nodes if n.name not in self.lost]
        out = {}
        for n, r in (self._round({n: req for n in live}) if live else {}).items():
            if isinstance(r, Exception):
                self._lose(n, r)
            else:
                out[n] = r
        return out

    def _run_commands(self, req: RunCommands) -> dict[str, CommandsDone]:
        return self._every_live_node(req)

    def _snapshot(self, dirs: list[str] | dict[str, str], programs: list[str]
                  ) -> dict[str, dict]:
        got = self._every_live_node(TakeSnapshot(dirs, list(programs)))
        return {n: r.data for n, r in got.items() if isinstance(r, SnapshotTaken)}

    def lost_nodes(self) -> dict[str, str]:
        return dict(self.lost)

    def _lose(self, node: str, err: BaseException) -> None:
        self.lost.setdefault(node, str(err) if isinstance(err, NodeLost) else f"node {node}: {err}")
        self.fanout.lose(node, err if isinstance(err, Exception) else NodeLost(str(err)))

    def _telemetry(self) -> dict[str, list]:
        out, self.rows = self.rows, {}
        return out

    def _results(self) -> dict[str, SlotResults | dict[int, Result]]:
        out: dict[str, SlotResults | dict[int, Result]] = {}
        for n, assigned in self.work.items():
            done = self.done.get(n)
            if done is not None and not self.failed.get(n) and len(done) == len(assigned):
                out[n] = done              # every slot answered its go: the arrays as sent
                continue
            got = {**self.failed.get(n, {}), **(dict(done) if done is not None else {})}
            for a in assigned:
                if a.place.slot not in got and n in self.lost:
                    got[a.place.slot] = Result(status="lost", error=self.lost[n])
            out[n] = got
        return out

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
                    self.tell("cleanup", "", f"the lease renewals did not stop ({e!r})")
            live = {n.name: request for n in self.nodes if n.name not in self.lost}
            try:
                got = self._submit(self._all(live)).result(timeout=CLOSE_S) if live else {}
            except STUCK as e:
                got = {n: e for n in live}
            for n, r in got.items():
                if isinstance(r, BaseException):
                    self.tell("cleanup", n, f"node {n} did not confirm the run's end "
                              f"({type(request).__name__}: {str(r) or type(r).__name__}): its "
                              "slots stop when its lease runs out; its scratch may remain")
        finally:
            if self.on_close:
                self.on_close()

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
