"""Simulated nodes that relay (issue 21: fan-out measured at 1,000 nodes): each runs the real
relay (relay.py), carrying the coordinator's rounds to its members over their real direct
channels and measuring their clocks through their real echoes, and answers its own requests
as every simulated node does (simulated.SimNode.answer, in its own clock).

Relay.forward blocks until its members answer, so a relay cannot share the single-threaded
selector of simulated.SimServer (it would hold every other node of the process, and wait
forever on members served there). Relays live apart, in processes of their own that hold
only relays (engines/simulated.py decides which nodes relay before it starts any), one
thread per relay: its coordinator's channel read by blocking, its clock echo in another.
"""
from __future__ import annotations

import json
import random
import sys
import threading
import time

from .clock import EchoServer
from .direct import FrameBuffer, send_frame
from .gate import Gate
from .procs import die_with_parent, open_files
from .protocol import (Abort, Clocks, Close, Failed, Forward, Group, Grouped, ProtocolMismatch,
                       SyncClocks, decode, encode)
from .relay import Relay
from .simulated import SimNode, read_setup


class Dies(Exception):
    """The relay's own Run drew its death (spec.loss): the whole node goes."""


class SimRelay:
    """One simulated node in a thread of its own, the relay of whichever group it is given."""

    def __init__(self, node: SimNode, secret: str, gate: Gate) -> None:
        self.node, self.secret, self.gate = node, secret, gate
        self.relay: Relay | None = None
        self.due = 0              # when the relay's own reply of a round is due (time_ns)
        self.ending = False       # its own request was Close or Abort: end after replying

    def serve(self) -> None:
        """Serve the coordinator's channel until it closes or the run ends; then the node
        ends: its members' channels and its own close."""
        echo = EchoServer("", lambda: self.node.echo_key, self.gate, self.node.now,
                          sock=self.node.echo)
        conn = None
        try:
            while conn is None:          # a wrong secret is refused; the next may be ours
                conn = self.node.listener.accept()
            buf = FrameBuffer()
            while not self.ending:
                for data in buf.read(conn):
                    reply = self._request(data)
                    send_frame(conn, encode(reply))
                    if self.ending:
                        break
        except (Dies, EOFError, OSError, ValueError):
            pass
        finally:
            if self.relay is not None:
                self.relay.close()
            if conn is not None:
                conn.close()
            self.node.listener.close()
            echo.close()

    def _request(self, data: bytes) -> object:
        try:
            req = decode(data, "the coordinator")
        except (ProtocolMismatch, ValueError) as e:
            return Failed(str(e))
        match req:
            case Group(members):
                if self.relay is not None:
                    self.relay.close()
                self.relay = Relay(members, self.secret, None, self.node.name)
                return Grouped(self.relay.open())
            case Forward(frames) if self.relay is not None:
                self.due = 0
                got = self.relay.forward(frames, self._own)
                self._wait(self.due)     # its own reply is ready when its own work is
                return got
            case SyncClocks() if self.relay is not None:
                # Relay measures against this process's clock; this node's runs offset_ns off
                c = self.relay.clocks()
                return Clocks({m: (o - self.node.offset_ns, e) for m, (o, e) in c.offsets.items()},
                              c.lost)
        reply, when = self._answer(req)
        self._wait(when)
        return reply

    def _own(self, data: bytes) -> bytes:
        """The relay's own request of a round, answered as any simulated node's."""
        try:
            req = decode(data, "the coordinator")
        except (ProtocolMismatch, ValueError) as e:
            return encode(Failed(str(e)))
        reply, when = self._answer(req)
        self.due = max(self.due, when)
        return encode(reply)

    def _answer(self, req: object) -> tuple[object, int]:
        if self.node.dies(req):
            raise Dies
        if isinstance(req, (Close, Abort)):
            self.ending = True
        return self.node.answer(req)

    @staticmethod
    def _wait(when: int) -> None:
        left = when - time.time_ns()
        if left > 0:
            time.sleep(left / 1e9)


def main() -> None:
    """As simulated.main, for nodes that relay: one thread each."""
    die_with_parent()
    spec, secret, names = read_setup()
    # per node: its two listening sockets, the listener's wake pair, two open channels; and
    # the relays' channels to their members (at most every node of the cluster, twice)
    open_files(8 * len(names) + 2 * spec.nodes + 256)
    gate = Gate()
    nodes = [SimNode(n, spec, secret, random.Random(f"{spec.seed}:{n}"), gate) for n in names]
    print(json.dumps([n.ports() for n in nodes]), flush=True)
    threads = [threading.Thread(target=SimRelay(n, secret, gate).serve) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.exit(0)


if __name__ == "__main__":
    main()
