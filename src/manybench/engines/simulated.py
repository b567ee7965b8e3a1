"""A simulated cluster (issue 21): the real coordinator, engine channels, store and report
against N simulated nodes (node/simulated.py) in a few local processes, to measure what a
run of 1,000 nodes x 64 slots costs the coordinator before there is such a cluster.

`manybench run plan.toml --simulate 1000x64,delay=1ms,loss=0.001,offset=5ms`. The nodes
answer every request at once with synthetic results (nothing runs: each slot "works"
`work` from T0), over real sockets, one direct channel per node as a Dask node's agent
offers one, so the phase path (engines/channels.py, engines/direct.Fanout) and everything
after it is what a real cluster gets. The run says it was simulated: every node's inventory
and a `simulated` warning.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import re
import subprocess
import sys
import time
from typing import Any

from ..config import timing
from ..results.contract import WarningKind
from ..node.clock import measure_offset
from ..security import auth
from ..node.protocol import (Abort, Close, DirectOffer, Info, Member, NodeInfo, Ping,
                             ProtocolMismatch, Request, Start, Started)
from ..node.simulated import SimSpec
from ..units import parse_duration
from . import Where
from .base import EngineConfig, EngineError, Node
from .channels import ChannelEngine
from .direct import DirectRefused, Fanout, NodeLost, connect
from .relays import per_relay_for, plan_groups

NODES_PER_PROCESS = 250
RELAYS_PER_PROCESS = 1       # threads of relays per process (each blocks on its members)
MAX_NODES = 100_000
_SIZE = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*$")
_OPTIONS = {"delay": "delay_ns", "jitter": "jitter_ns", "offset": "offset_ns",
            "work": "work_ns", "loss": "loss", "processes": "processes", "seed": "seed"}


def parse_spec(text: str) -> SimSpec:
    """`NODESxSLOTS[,delay=D][,jitter=D][,loss=P][,offset=D][,work=D][,processes=N][,seed=N]`
    as a SimSpec; ValueError saying which part is wrong."""
    size, *opts = text.split(",")
    m = _SIZE.match(size)
    if not m:
        raise ValueError(f"expected NODESxSLOTS (like 1000x64), got {size.strip()!r}")
    nodes, slots = int(m[1]), int(m[2])
    if not 1 <= nodes <= MAX_NODES or not 1 <= slots <= 4096:
        raise ValueError(f"nodes must be 1..{MAX_NODES} and slots 1..4096, got {size.strip()}")
    fields: dict[str, Any] = {}
    for opt in opts:
        key, sep, value = (s.strip() for s in opt.partition("="))
        if key not in _OPTIONS or not sep:
            raise ValueError(f"unknown option {opt.strip()!r} (options: "
                             f"{', '.join(f'{k}=' for k in _OPTIONS)})")
        name = _OPTIONS[key]
        try:
            if name.endswith("_ns"):
                fields[name] = round(parse_duration(value) * 1e9)
            elif name == "loss":
                fields[name] = float(value)
                if not 0 <= fields[name] <= 1:
                    raise ValueError("a chance between 0 and 1")
            else:
                fields[name] = int(value)
                if fields[name] < 0:
                    raise ValueError("not negative")
        except ValueError as e:
            raise ValueError(f"{key}={value}: {e}") from None
    return SimSpec(nodes, slots, **fields)


def make(plan: object, where: Where, config: EngineConfig) -> SimulatedEngine:
    """The engine registry's maker (engines/__init__.py): --simulate SPEC."""
    try:
        return SimulatedEngine(parse_spec(where.simulate or ""), config)
    except ValueError as e:
        raise EngineError(f"--simulate: {e}") from None


class SimulatedEngine(ChannelEngine):
    def __init__(self, spec: SimSpec, config: EngineConfig = EngineConfig()) -> None:
        super().__init__(Fanout(self._no_relay), config)
        self.spec = spec
        self.secret = auth.new_secret()
        self.procs: list[subprocess.Popen] = []
        self.echo: dict[str, int] = {}

    @staticmethod
    def _no_relay(node: str, kind: str, data: bytes) -> cf.Future:
        fut: cf.Future = cf.Future()
        fut.set_exception(NodeLost(f"node {node} lost: its direct channel is gone"))
        return fut

    # -- start ----------------------------------------------------------------------------
    def _spawn(self) -> list[dict]:
        """The node processes, started; each node's ports. The nodes that will relay (the
        groups engines/relays.py would form, decided here first) run apart, RELAYS_PER_PROCESS
        to a process: a relay blocks on its members (node/simulated_relay.py)."""
        spec = self.spec
        names = spec.node_names()
        relays = set(plan_groups(names, per_relay_for(len(names), self.config.per_relay)))
        members = [n for n in names if n not in relays]
        per = max(1, math.ceil(len(members) / (spec.processes or max(
            1, min(math.ceil(len(members) / NODES_PER_PROCESS), 2 * (os.cpu_count() or 1))))))
        for i in range(0, len(members), per):
            self._start("manybench.node.simulated", members[i:i + per])
        ordered = sorted(relays)
        for i in range(0, len(ordered), RELAYS_PER_PROCESS):
            self._start("manybench.node.simulated_relay", ordered[i:i + RELAYS_PER_PROCESS])
        ports = []
        for p in self.procs:
            line = p.stdout.readline()
            if not line:
                raise EngineError("a simulated node process did not start (see above)")
            ports += json.loads(line)
        return ports

    def _start(self, module: str, names: list[str]) -> None:
        p = subprocess.Popen([sys.executable, "-m", module, json.dumps(self.spec.__dict__)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        p.stdin.write(f"{self.secret}\n{json.dumps(names)}\n")
        p.stdin.flush()
        self.procs.append(p)

    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        self.open_files_for(self.spec.nodes)
        try:
            ports = self._spawn()
        except OSError as e:
            raise EngineError(f"starting the simulated nodes: {e}") from None

        def open_one(p: dict) -> Any:
            try:
                return connect("127.0.0.1", DirectOffer(p["port"], False), self.secret, None,
                               f"node {p['node']}")
            except (OSError, EOFError, DirectRefused, ProtocolMismatch, ValueError) as e:
                return e
        with cf.ThreadPoolExecutor(max_workers=32) as pool:
            socks = list(pool.map(open_one, ports))
        for p, sock in zip(ports, socks):
            if isinstance(sock, Exception):
                raise EngineError(f"simulated node {p['node']}: {sock}")
            self.fanout.add(p["node"], sock)
            self.echo[p["node"]] = p["echo"]
        infos = self._must(self._round({p["node"]: Info() for p in ports}), "Info")
        for name, info in sorted(infos.items()):
            assert isinstance(info, NodeInfo)
            inv = dict(info.inventory, channel="direct")
            self.nodes.append(Node(name, slots or info.slots, tuple(info.cpus),
                                   machine=info.machine, host=info.host, inventory=inv))
        # the groups _spawn started relays for (the same plan): members reached through them
        self.form_groups({p["node"]: Member("127.0.0.1", p["port"], False, p["echo"])
                          for p in ports})
        self.sync_clocks()
        started = self._must(self._round({
            n.name: Start(run, n.name, n.slots, default_dir, keep, self.config.telemetry_s,
                          secret=self.secret, kill_grace_s=timing("node.kill_grace"))
            for n in self.nodes}), "Start")
        t = time.monotonic_ns()
        self._must(self._round({n.name: Ping() for n in self.nodes}), "Ping")
        rpc = time.monotonic_ns() - t
        self.dispatch_hint_ns = max(s.dispatch_ns for s in started.values()
                                    if isinstance(s, Started)) + rpc
        self.add_warning(WarningKind.SIMULATED, "", f"{self.spec.nodes} simulated nodes x {self.spec.slots} "
                  "slots in this machine's processes: nothing ran on them; the records are "
                  "synthetic and measure the coordinator, not a machine")
        return self.nodes

    def _must(self, replies: dict[str, Any], what: str) -> dict[str, Any]:
        for name, r in replies.items():
            if isinstance(r, Exception):
                raise EngineError(f"simulated node {name} did not answer {what}: {r}")
        return replies

    def sync_clocks(self) -> None:
        key = auth.derive(self.secret, "echo")
        self.compose_clocks(lambda n: measure_offset("127.0.0.1", self.echo[n.name], key))

    # -- the end ----------------------------------------------------------------------------
    def _finish(self, req: Request) -> None:
        try:
            live = {n.name: req for n in self.nodes if n.name not in self.lost}
            if live:
                self.fanout.send(live)
                self.fanout.wait(10.0)
        finally:
            self.fanout.close()
            for p in self.procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                    self.add_warning(WarningKind.CLEANUP, "", f"a simulated node process ({p.pid}) did not "
                              "end with its nodes and was killed")

    def close(self) -> None:
        self._finish(Close())

    def abort(self) -> None:
        self.fanout.abandon()
        self.pending = False
        self._finish(Abort())
