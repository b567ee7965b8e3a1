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

Groups (the largest runs, engines/relays.py): a member node's request goes inside its
relay's Forward, with the relay's own (node/relay.py); the relay's Forwarded is unpacked and
each node's reply delivered as if it had come direct. A member the relay reports lost is lost
"(through relay X)"; a relay lost loses its members with it, in that round and every later one.
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

from ..node import direct as channel
from ..node.direct import DirectRefused, FrameBuffer, send_frame
from ..node.protocol import (DirectOffer, Failed, Forward, Forwarded, ProtocolMismatch, Request,
                             decode, encode)

__all__ = ["DirectRefused", "Fanout", "NodeLost", "connect", "refusal"]


class NodeLost(Exception):
    """A node stopped answering: its channel closed, timed out, or its worker is gone."""


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
    return channel.connect(host, offer.port, offer.tls, secret, ctx, who)


@dataclass
class _Link:
    node: str
    sock: socket.socket
    buf: FrameBuffer = field(default_factory=FrameBuffer)


class Fanout:
    """Rounds of requests, one per node, over direct channels, relays (node/relay.py) or the
    Dask worker's relay."""

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
        self.answered_at: dict[str, float] = {}   # node -> when its reply was taken (monotonic)
        self.round = 0
        self.sent_at = 0.0                        # monotonic: the round's send began
        # the last round every node answered (or was lost in): (sent_at, replies); the
        # lease renewer reads it from another thread, so it is replaced whole
        self.answered: tuple[float, dict[str, Any]] = (0.0, {})
        self.groups: dict[str, list[str]] = {}    # relay -> its members
        self.via: dict[str, str] = {}             # member -> its relay
        self.carried: dict[str, list[str]] = {}   # relay -> nodes of its Forward not answered
        self.relay_lost: dict[str, str] = {}      # relay -> why it was lost

    def add(self, node: str, sock: socket.socket) -> None:
        link = _Link(node, sock)
        self.links[node] = link
        self.sel.register(sock, selectors.EVENT_READ, link)

    def group(self, relay: str, members: list[str]) -> None:
        """From now on, reach these nodes through `relay` (a relay's Forward): their own
        channels are closed (their agents now serve the relay's)."""
        for m in members:
            self.drop(m)
            self.via[m] = relay
        if members:
            self.groups[relay] = [*self.groups.get(relay, []), *members]

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
    def send(self, reqs: dict[str, Request], encoded: dict[str, bytes] | None = None) -> None:
        """Send each node its request (replies: wait); a round still waiting is abandoned.
        encoded: envelopes already made for some of them (encode(req)'s bytes).
        A member's request goes in its relay's Forward, with the relay's own if it has one;
        each Forward is sent once its group is encoded, so relays carry the round on while
        the coordinator encodes the next groups' requests."""
        self.round += 1
        self.replies, self.waiting, self.carried = {}, set(reqs), {}
        self.answered_at = {}
        self.sent_at = time.monotonic()
        made = encoded or {}

        def encode_(node: str) -> bytes:
            got = made.get(node)
            return got if got is not None else encode(reqs[node])
        bundles: dict[str, dict[str, bytes]] = {}    # members whose relay has no request
        for node, req in reqs.items():
            relay = self.via.get(node)
            if relay is not None:
                if relay not in reqs:
                    bundles.setdefault(relay, {})[node] = encode_(node)
                continue                 # else it went, or goes, with its relay's own
            if node in self.groups and any(m in reqs for m in self.groups[node]):
                frames = {node: encode_(node)}   # the relay's own travels with its members'
                frames.update((m, encode_(m)) for m in self.groups[node] if m in reqs)
                self._forward(node, frames)
                continue
            data = encode_(node)
            link = self.links.get(node)
            if link is None:
                fut = self.relay(node, type(req).__name__, data)
                fut.add_done_callback(lambda f, n=node, r=self.round: self._relayed(n, r, f))
                continue
            try:
                send_frame(link.sock, data)
            except OSError as e:
                self._lost(node, f"its direct channel failed: {e}")
        for relay, frames in bundles.items():
            self._forward(relay, frames)

    def _forward(self, relay: str, frames: dict[str, bytes]) -> None:
        """One relay's Forward of this round's frames (node -> its request's envelope)."""
        self.carried[relay] = list(frames)
        link = self.links.get(relay)
        try:
            if link is None:
                raise OSError(self.relay_lost.get(relay, "its channel is closed"))
            send_frame(link.sock, encode(Forward(frames)))
        except OSError as e:
            self._lost(relay, f"its direct channel failed: {e}")

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
        if self.waiting:
            return False
        self.answered = (self.sent_at, self.replies)
        return True

    def abandon(self) -> None:
        """Stop waiting for this round (its late replies are ignored)."""
        self.round += 1
        self.waiting, self.carried = set(), {}

    def _deliver(self, node: str, reply: Any) -> None:
        if node in self.waiting:
            self.waiting.discard(node)
            self.replies[node] = reply
            self.answered_at[node] = time.monotonic()

    def lose(self, node: str, err: Exception) -> None:
        """The node is lost (found by the engine: a timeout, its worker gone): its channel
        is closed and, if the round waits for it, err is its reply. A relay's members in
        the round are lost with it, and in every later round."""
        self.drop(node)
        self._deliver(node, err)
        if node in self.groups:
            why = str(err)
            self.relay_lost.setdefault(node, why)
            for m in self.carried.pop(node, self.groups[node]):
                if m != node:
                    self._deliver(m, NodeLost(f"node {m} lost: its relay {node} was lost ({why})"))

    def _lost(self, node: str, why: str) -> None:
        self.lose(node, NodeLost(f"node {node} lost: {why}"))

    def _read(self, link: _Link) -> None:
        try:
            frames = link.buf.read(link.sock)
        except EOFError:
            self._lost(link.node, "its direct channel closed")
            return
        except ValueError:
            self._lost(link.node, "its direct channel sent garbage")
            return
        except OSError as e:      # reset, timed out (keepalive), TLS failure
            self._lost(link.node, f"its direct channel failed: {e}")
            return
        for data in frames:
            if link.node in self.carried:
                self._forwarded(link.node, data)
            elif link.node in self.waiting:
                self._deliver(link.node, self._reply(link.node, data))
            else:
                self._lost(link.node, "its direct channel sent what was not asked for")
                return

    def _forwarded(self, relay: str, data: bytes) -> None:
        """A relay's Forwarded: each node's reply delivered as if it came direct."""
        nodes = self.carried.pop(relay)
        got = self._reply(relay, data)
        if not isinstance(got, Forwarded):     # the relay failed the round: all of it
            if not isinstance(got, Exception):
                got = NodeLost(f"node {relay} lost: it answered a Forward with "
                               f"{type(got).__name__}")
            for n in nodes:
                self._deliver(n, got if n == relay else NodeLost(
                    f"node {n} lost: its relay {relay} failed the round ({got})"))
            return
        for n, reply in got.replies.items():
            if n in nodes:
                self._deliver(n, self._reply(n, reply))
        for n, why in got.lost.items():
            self._deliver(n, NodeLost(f"node {n} lost: {why} (through relay {relay})"))
        for n in nodes:          # a relay that says nothing of a node: lost all the same
            self._deliver(n, NodeLost(f"node {n} lost: relay {relay} gave no reply for it"))

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
