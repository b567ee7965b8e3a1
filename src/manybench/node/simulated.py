"""Simulated nodes (issue 21): many in one process, each speaking the real protocol over real
sockets, so the coordinator, its engine, the store and the report can be the real ones at
1,000 nodes x 64 slots on one machine.

Each node has a direct channel (node/direct.py: its own port, opened with the run's secret,
frames of protocol.encode envelopes) and a clock echo (node/clock.py's exchange, opened the
same way); one gate thread per process authenticates every node's connections (gate.py). It
answers every request at once, without running anything: a Run's reply carries synthetic
results (every slot started at T0, worked `work_ns`, one op), sent when that work would be
over plus the configured delay. Configurable per spec: a delay and jitter on every reply,
the chance per phase that a node dies (its channels close, as a node's would), and each
node's clock offset (its stamps, its T0 and its echo all read its own clock).

One process serves its share of the nodes with one selector; engines/simulated.py starts
a few (`python -m manybench.node.simulated`), reads each node's ports from the first line
the process prints, and drives them. Nodes that relay run in processes of their own
(simulated_relay.py): a relay waits on its members, and would hold a shared selector. What the records say of such nodes is synthetic: their
inventory says `simulated`, and so does a warning in the run.
"""
from __future__ import annotations

import heapq
import json
import os
import random
import selectors
import socket
import sys
import time
from dataclasses import asdict, dataclass

from ..security import auth
from ..status import OK_TEXT
from .arrays import SlotResults
from .clock import answer_one
from .direct import FRAME, MAX_FRAME, Listener, read_some, send_frame
from .gate import Door, Gate, drain
from .procs import die_with_parent, open_files
from .protocol import (Abort, Close, CommandOutput, CommandsDone, Connect, Connected, Failed,
                       Finished, Info, MeasureNoise, NodeInfo, NoiseFloor, Ping, Prepare,
                       Prepared, ProtocolMismatch, Renew, Run, RunCommands, SnapshotTaken,
                       Start, Started, TakeSnapshot, decode, encode)
from .wire_types import Cpu



@dataclass(frozen=True)
class SimSpec:
    """What a simulated cluster is: its size and how its nodes misbehave."""
    nodes: int
    slots: int
    delay_ns: int = 0         # added to every reply
    jitter_ns: int = 0        # a further 0..jitter, drawn per reply
    loss: float = 0.0         # the chance per phase (per Run) that a node dies
    offset_ns: int = 0        # each node's clock off by a value drawn in [-offset, +offset]
    work_ns: int = 100_000    # a slot's synthetic work in a phase
    processes: int = 0        # 0: one per 250 nodes, at most the machine's cpus x 2
    seed: int = 1

    def node_names(self) -> list[str]:
        width = len(str(self.nodes))
        return [f"sim{i:0{width}d}" for i in range(1, self.nodes + 1)]


class SimNode:
    """One simulated node: its listener, its coordinator's connection, its echo."""

    def __init__(self, name: str, spec: SimSpec, secret: str, rng: random.Random,
                 gate: Gate) -> None:
        """gate: the process's handshake thread, shared by its nodes."""
        self.name, self.spec, self.rng = name, spec, rng
        self.offset_ns = rng.randint(-spec.offset_ns, spec.offset_ns) if spec.offset_ns else 0
        self.listener = Listener(secret, host="127.0.0.1", gate=gate)
        self.echo = socket.create_server(("127.0.0.1", 0))     # its door: the server's
        self.echo_key = auth.derive(secret, "echo")
        self.conn: socket.socket | None = None
        self.buf = bytearray()
        self.slots = spec.slots
        self.alive = True
        self.seen: tuple[list, list[int]] = ([], [])   # a Run's assignments, their slots

    def now(self) -> int:
        """This node's clock."""
        return time.time_ns() + self.offset_ns

    def ports(self) -> dict:
        return {"node": self.name, "port": self.listener.port,
                "echo": self.echo.getsockname()[1]}

    # -- answers -------------------------------------------------------------------------
    def answer(self, req: object) -> tuple[object, int]:
        """The reply to a request and when to send it (time.time_ns()); for a Run, what its
        slots did."""
        now = time.time_ns()
        match req:
            case Info():
                cpus = tuple(Cpu(i, i, 0, 0) for i in range(self.spec.slots))
                return NodeInfo(self.name, self.spec.slots, cpus,
                                self.echo.getsockname()[1], "127.0.0.1", os.getpid(),
                                f"simulated:{self.name}",
                                {"simulated": {**asdict(self.spec),
                                               "true_offset_ns": self.offset_ns}}), now
            case MeasureNoise():
                return NoiseFloor(None), now
            case Start(slots=slots):
                self.slots = slots
                return Started(self.spec.work_ns), now
            case Prepare(work=work):
                return Prepared(SlotResults(), {a.place.slot: {} for a in work}), now
            case Connect():
                return Connected(SlotResults()), now
            case Run(t0_ns=t0, work=work):
                return self._finished(t0, self._slots(work), now)
            case RunCommands(commands=commands):
                t = self.now()
                outs = [CommandOutput(list(c), 0, "", "simulated: not run", t, t)
                        for c in commands]
                return CommandsDone(outs, {"taken_ns": t}, {"taken_ns": t}), now
            case TakeSnapshot():
                return SnapshotTaken({"taken_ns": self.now()}), now
            case Ping() | Renew() | Close() | Abort():
                return None, now
        return Failed(f"a simulated node does not answer {type(req).__name__}"), now

    def _slots(self, work: list) -> list[int]:
        """The slots of a Run's assignments, listed again only when they are not the last
        Run's: the same come phase after phase, the same objects (codec.py makes a shared
        value once), so the check is one identity test per assignment."""
        if self.seen[0] != work:
            self.seen = (work, [a.place.slot for a in work])
        return self.seen[1]

    def _finished(self, t0: int, slots: list[int], now: int) -> tuple[Finished, int]:
        armed = now + self.offset_ns       # the go arrived: the node's slots are armed
        start = max(t0, armed)
        end = start + self.spec.work_ns
        k = len(slots)
        res = SlotResults(slot=slots, start_ns=[start] * k, end_ns=[end] * k,
                          armed_ns=[armed] * k, elapsed_ns=[self.spec.work_ns] * k,
                          ops=[1] * k, bytes=[0] * k, status=[OK_TEXT] * k)
        due = end - self.offset_ns + self.spec.delay_ns
        if self.spec.jitter_ns:
            due += self.rng.randint(0, self.spec.jitter_ns)
        return Finished(res), due

    def dies(self, req: object) -> bool:
        return isinstance(req, Run) and self.spec.loss > 0 and self.rng.random() < self.spec.loss


class SimServer:
    """Serves a share of the simulated nodes on one selector until every node has ended."""

    def __init__(self, nodes: list[SimNode], gate: Gate) -> None:
        self.nodes, self.gate = nodes, gate
        self.sel = selectors.DefaultSelector()
        # (when, seq, node, reply): encoded when sent, as a node's reply is made at its end
        # (encoding at the go's arrival would load the machine while the go is dispatched)
        self.due: list[tuple[int, int, SimNode, object]] = []
        self.seq = 0
        self.echoes: list[tuple[SimNode, socket.socket, bytes]] = []   # opened by the gate
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, ("echo-opened", None))
        self.doors = {}
        for n in nodes:
            self.sel.register(n.listener, selectors.EVENT_READ, ("listen", n))
            self.doors[n.name] = gate.open(Door(
                n.echo, "echo", lambda n=n: n.echo_key if n.alive else None,
                lambda conn, session, n=n: self._opened(n, conn, session)))

    def _opened(self, node: SimNode, conn: socket.socket, session: bytes) -> None:
        self.echoes.append((node, conn, session))     # the gate's thread: list.append is atomic
        self.wake_w.send(b"x")

    def serve(self) -> None:
        while any(n.alive for n in self.nodes):
            timeout = None
            if self.due:
                timeout = max(0.0, (self.due[0][0] - time.time_ns()) / 1e9)
            for key, _ in self.sel.select(timeout):
                what, node = key.data
                # an event may be stale: one before it in the batch replaced or closed its
                # socket (a relay's channel taken as the coordinator closes its own, both
                # ready at once on a loaded machine); reading node.conn then blocked on the
                # relay's new channel, and every node and echo of this process with it
                if what == "listen":
                    if node.alive:
                        self._accept(node)
                elif what == "echo-opened":
                    self._take_echoes()
                elif what == "echo":
                    self._echo(key.fileobj, *node)
                elif key.fileobj is node.conn:
                    self._read(node)
            now = time.time_ns()
            while self.due and self.due[0][0] <= now:
                _, _, node, reply = heapq.heappop(self.due)
                if node.conn is not None:
                    try:
                        send_frame(node.conn, encode(reply))
                    except OSError:
                        self._end(node)

    def _accept(self, node: SimNode) -> None:
        conn = node.listener.take()        # authenticated by the gate, or None
        if conn is None:
            return
        if node.conn is not None:          # the coordinator again: the last one counts
            self.sel.unregister(node.conn)
            node.conn.close()
        node.conn, node.buf = conn, bytearray()
        self.sel.register(conn, selectors.EVENT_READ, ("conn", node))

    def _take_echoes(self) -> None:
        drain(self.wake_r)
        while self.echoes:
            node, conn, session = self.echoes.pop(0)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sel.register(conn, selectors.EVENT_READ, ("echo", (node, session)))

    def _echo(self, conn: socket.socket, node: SimNode, session: bytes) -> None:
        """One request of the node's echo, stamped in its own clock."""
        if not node.alive or not answer_one(conn, node.echo_key, session, node.now):
            self.sel.unregister(conn)
            conn.close()

    def _read(self, node: SimNode) -> None:
        try:
            chunk = read_some(node.conn)
        except OSError:
            chunk = b""
        if not chunk:
            if node.listener.opened:   # closed as its relay's came: the relay's is its channel now
                self._accept(node)
            else:
                self._end(node)
            return
        buf = node.buf
        buf += chunk
        while len(buf) >= FRAME.size:
            (n,) = FRAME.unpack_from(buf)
            if n > MAX_FRAME:
                self._end(node)
                return
            if len(buf) < FRAME.size + n:
                return
            data = bytes(buf[FRAME.size:FRAME.size + n])
            del buf[:FRAME.size + n]
            self._request(node, data)
            if node.conn is None:
                return

    def _request(self, node: SimNode, data: bytes) -> None:
        try:
            req = decode(data, "the coordinator")
        except (ProtocolMismatch, ValueError) as e:
            send_frame(node.conn, encode(Failed(str(e))))
            return
        if node.dies(req):
            self._end(node)
            return
        reply, when = node.answer(req)
        if when <= time.time_ns():
            send_frame(node.conn, encode(reply))
        else:
            self.seq += 1
            heapq.heappush(self.due, (when, self.seq, node, reply))
        if isinstance(req, (Close, Abort)):
            self._end(node)

    def _end(self, node: SimNode) -> None:
        """The node ends (closed, aborted, or dying): its channels close."""
        node.alive = False
        if node.conn is not None:
            self.sel.unregister(node.conn)
            node.conn.close()
            node.conn = None
        if node.listener.sock.fileno() >= 0:
            self.sel.unregister(node.listener)
            node.listener.close()
        if node.echo.fileno() >= 0:
            self.gate.shut(self.doors[node.name])
            node.echo.close()


def read_setup() -> tuple[SimSpec, str, list[str]]:
    """A node process's setup: the spec (JSON) in argv; the run's secret and the names of
    the nodes to serve (a JSON list) on stdin, a line each."""
    spec = SimSpec(**json.loads(sys.argv[1]))
    secret = sys.stdin.readline().strip()
    return spec, secret, json.loads(sys.stdin.readline())


def main() -> None:
    """Serves the nodes read_setup names; prints one JSON line first: each node's ports."""
    die_with_parent()
    spec, secret, names = read_setup()
    # per node: its two listening sockets, the listener's wake pair, two open channels
    open_files(8 * len(names) + 256)
    gate = Gate()
    nodes = [SimNode(n, spec, secret, random.Random(f"{spec.seed}:{n}"), gate) for n in names]
    print(json.dumps([n.ports() for n in nodes]), flush=True)
    SimServer(nodes, gate).serve()


if __name__ == "__main__":
    main()
