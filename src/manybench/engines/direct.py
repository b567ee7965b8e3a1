"""The coordinator's side of the nodes' direct channels (node/direct.py), and one request to
many nodes at once over them.

After a Dask run's Start, each node's agent offers a port of its own; the coordinator
connects there, says Hello with the run's secret, and from then on sends the node's requests
there: one frame per node per phase each way, no Dask worker, no event loop, no thread hop.
A node that cannot be reached directly (no offer, a refusal, a firewall) keeps the worker's
relay, and the run is told why (a `relay` warning); a secured cluster's nodes are reached
over TLS with the cluster's certificates, or through the relay, never in the clear.

Fanout sends a round of requests (one per node) and takes the replies in as they come, from
the direct channels (a selector on their sockets) and from relayed requests (futures on the
Dask client's loop, which wake the selector). A direct channel that closes, times out or
speaks garbage is a lost node (NodeLost), as a relayed request that fails is.
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import selectors
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..node.direct import FRAME, MAX_FRAME, recv_frame, send_frame, tune
from ..node.protocol import DirectOffer, Failed, Hello, ProtocolMismatch, Request, decode, encode

CONNECT_S = 10.0      # to connect, finish TLS and have the Hello answered
IO_S = 60.0           # a frame begun must be sent or read to its end within this


class NodeLost(Exception):
    """A node stopped answering: its channel closed, timed out, or its worker is gone."""


class DirectRefused(Exception):
    """The node answered Hello with Failed(why)."""


def refusal(offer: DirectOffer | None, why: str, secured: bool,
            ctx: ssl.SSLContext | None) -> str:
    """Why a node with this offer is not reached directly ("" when it is): it offers no
    channel, its channel is plain on a secured cluster, or it wants TLS the coordinator has
    no certificates for."""
    if offer is None:
        return why or "its agent offers no direct channel"
    if secured and not offer.tls:
        return "the cluster is secured and its agent listens without TLS: not used in the clear"
    if offer.tls and ctx is None:
        return "its agent listens with TLS and this coordinator has no TLS certificates"
    return ""


def connect(host: str, offer: DirectOffer, secret: str, ctx: ssl.SSLContext | None,
            who: str) -> socket.socket:
    """A node's direct channel, its Hello answered; DirectRefused (the node's reason),
    ProtocolMismatch or OSError otherwise."""
    sock = socket.create_connection((host, offer.port), timeout=CONNECT_S)
    try:
        if offer.tls:
            sock = ctx.wrap_socket(sock, server_hostname=host)
        send_frame(sock, encode(Hello(secret)))
        reply = decode(recv_frame(sock), who)
    except BaseException:
        sock.close()
        raise
    if isinstance(reply, Failed):
        sock.close()
        raise DirectRefused(reply.error)
    tune(sock)
    sock.settimeout(IO_S)
    return sock


@dataclass
class _Link:
    node: str
    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)


class Fanout:
    """Rounds of requests, one per node, over direct channels or a relay."""

    def __init__(self, relay: Callable[[str, str, bytes], cf.Future]) -> None:
        """relay(node, kind, request bytes): the future of the worker's reply bytes."""
        self.relay = relay
        self.sel = selectors.DefaultSelector()
        self.links: dict[str, _Link] = {}
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        self.relayed: collections.deque = collections.deque()   # (node, future): done
        self.waiting: set[str] = set()
        self.replies: dict[str, Any] = {}     # node -> reply, or the exception it came to
        self.round = 0

    def add(self, node: str, sock: socket.socket) -> None:
        link = _Link(node, sock)
        self.links[node] = link
        self.sel.register(sock, selectors.EVENT_READ, link)

    def direct(self, node: str) -> bool:
        return node in self.links

    def drop(self, node: str) -> None:
        """Close a node's direct channel (it is lost, or the run ends)."""
        link = self.links.pop(node, None)
        if link is not None:
            self.sel.unregister(link.sock)
            link.sock.close()

    def close(self) -> None:
        """Close every channel (the run ends); again: nothing more."""
        for node in list(self.links):
            self.drop(node)
        if self.wake_r.fileno() >= 0:
            self.sel.close()
            self.wake_r.close()
            self.wake_w.close()

    # -- one round -------------------------------------------------------------------------
    def send(self, reqs: dict[str, Request]) -> None:
        """Send each node its request (replies: wait); a round still waiting is abandoned."""
        self.round += 1
        self.replies, self.waiting = {}, set(reqs)
        for node, req in reqs.items():
            data = encode(req)
            link = self.links.get(node)
            if link is None:
                fut = self.relay(node, type(req).__name__, data)
                fut.add_done_callback(lambda f, n=node, r=self.round: self._relayed(n, r, f))
                continue
            try:
                send_frame(link.sock, data)
            except OSError as e:
                self._lost(node, f"its direct channel failed: {e}")

    def wait(self, timeout: float | None) -> bool:
        """Take replies in for up to `timeout` s (None: until all came); True once every node
        of the round has answered or is lost."""
        end = None if timeout is None else time.monotonic() + timeout
        while self.waiting:
            left = None if end is None else max(0.0, end - time.monotonic())
            for key, _ in self.sel.select(left):
                if key.data is None:
                    self._take_relayed()
                else:
                    self._read(key.data)
            if end is not None and time.monotonic() >= end:
                break
        return not self.waiting

    def abandon(self) -> None:
        """Stop waiting for this round (its late replies are ignored)."""
        self.round += 1
        self.waiting = set()

    def _deliver(self, node: str, reply: Any) -> None:
        if node in self.waiting:
            self.waiting.discard(node)
            self.replies[node] = reply

    def lose(self, node: str, err: Exception) -> None:
        """The node is lost (found by the engine: a timeout, its worker gone): its channel
        is closed and, if the round waits for it, err is its reply."""
        self.drop(node)
        self._deliver(node, err)

    def _lost(self, node: str, why: str) -> None:
        self.lose(node, NodeLost(f"node {node} lost: {why}"))

    def _read(self, link: _Link) -> None:
        try:
            chunk = link.sock.recv(1 << 20)
            while isinstance(link.sock, ssl.SSLSocket) and link.sock.pending():
                chunk += link.sock.recv(link.sock.pending())
        except OSError as e:      # reset, timed out (keepalive), TLS failure
            self._lost(link.node, f"its direct channel failed: {e}")
            return
        if not chunk:
            self._lost(link.node, "its direct channel closed")
            return
        buf = link.buf
        buf += chunk
        while len(buf) >= FRAME.size:
            (n,) = FRAME.unpack_from(buf)
            if n > MAX_FRAME:
                self._lost(link.node, "its direct channel sent garbage")
                return
            if len(buf) < FRAME.size + n:
                break
            data = bytes(buf[FRAME.size:FRAME.size + n])
            del buf[:FRAME.size + n]
            if link.node not in self.waiting:
                self._lost(link.node, "its direct channel sent what was not asked for")
                return
            self._deliver(link.node, self._reply(link.node, data))

    def _reply(self, node: str, data: bytes) -> Any:
        """A node's reply decoded; Failed as a RuntimeError, a foreign one as its error."""
        try:
            reply = decode(data, f"node {node}")
        except ProtocolMismatch as e:
            return e
        except ValueError as e:
            return NodeLost(f"node {node} lost: it sent what is not a manybench reply ({e})")
        if isinstance(reply, Failed):
            return RuntimeError(f"node {node}: {reply.error}")
        return reply

    # -- relayed requests (Dask client's loop -> this thread) ------------------------------
    def _relayed(self, node: str, round_: int, fut: cf.Future) -> None:
        self.relayed.append((node, round_, fut))
        try:
            self.wake_w.send(b"\0")
        except OSError:      # closed: the engine is gone
            pass

    def _take_relayed(self) -> None:
        try:
            while self.wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while self.relayed:
            node, round_, fut = self.relayed.popleft()
            if round_ != self.round:
                continue
            try:
                data = fut.result()
            except ProtocolMismatch as e:
                self._deliver(node, e)
            except (Exception, cf.CancelledError) as e:  # comm closed, worker gone, refused
                self._deliver(node, NodeLost(f"node {node} lost: {type(e).__name__}: {e}"))
            else:
                self._deliver(node, self._reply(node, data))
