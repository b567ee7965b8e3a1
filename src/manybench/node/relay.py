"""A relay: a node's agent that carries each round of the coordinator's requests to a group of
member nodes and gathers their replies (issue 21: fan-out for the largest runs).

The coordinator (engines/direct.py) sends the relay one Forward per round, holding each
member's request as the envelope it encoded; the relay sends each member its envelope over
the member's direct channel (direct.py: the run's secret, TLS with this node's certificates
when the member wants it), serves its own request (under its own name) while the members
work, then gathers their replies and answers one Forwarded. Nothing of a member's request
or reply is decoded here: it costs the relay a copy, and every stamp stays in the member's
own clock, as if the member had answered the coordinator itself.

A member whose channel closes, resets or speaks garbage is lost: named in Forwarded.lost
with why, its channel closed, and every later round answers it lost at once. A member whose
agent is alive but silent holds the round (the coordinator's deadline then loses the group).
SyncClocks: each member's clock against this node's, by Cristian's algorithm (clock.py); the
coordinator adds this node's own offset (offsets compose, and so do their bounds).

Usable on its own (the simulated cluster hosts relays with it): Relay(members, secret, ctx,
name), open(), forward(frames, own), clocks(), close().
"""
from __future__ import annotations

import concurrent.futures as cf
import selectors
import socket
import ssl
from typing import Callable

from ..security import auth
from .clock import measure_offset
from .direct import DirectRefused, FrameBuffer, connect, send_frame
from .protocol import Clocks, Forwarded, Member, ProtocolMismatch

PARALLEL = 8        # members connected to, or measured, at once


class Relay:
    def __init__(self, members: dict[str, Member], secret: str,
                 ctx: ssl.SSLContext | None = None, name: str = "") -> None:
        """members: node -> where its channel and echo are; secret: the run's; ctx: TLS to
        members that listen with it; name: this node's own (its own request's key)."""
        self.spec = dict(members)
        self.secret, self.ctx, self.name = secret, ctx, name
        self.echo_key = auth.derive(secret, "echo")
        self.links: dict[str, socket.socket] = {}
        self.gone: dict[str, str] = {}        # member -> why it was lost
        self.sel = selectors.DefaultSelector()

    @property
    def members(self) -> list[str]:
        """The members reached, by name."""
        return sorted(self.links)

    def open(self) -> dict[str, str]:
        """Open every member's channel (a few at once); those that fail are not members,
        with why."""
        def one(item: tuple[str, Member]) -> tuple[str, socket.socket | str]:
            node, m = item
            try:
                return node, connect(m.host, m.port, m.tls, self.secret, self.ctx, f"node {node}")
            except (OSError, EOFError, ValueError, DirectRefused, ProtocolMismatch) as e:
                return node, f"relay {self.name} cannot open its channel ({m.host}:{m.port}): {e}"
        failed = {}
        with cf.ThreadPoolExecutor(max_workers=min(PARALLEL, max(1, len(self.spec)))) as pool:
            for node, got in pool.map(one, self.spec.items()):
                if isinstance(got, str):
                    failed[node] = got
                else:
                    self.links[node] = got
                    self.sel.register(got, selectors.EVENT_READ, (node, FrameBuffer()))
        return failed

    def forward(self, frames: dict[str, bytes],
                own: Callable[[bytes], bytes] | None = None) -> Forwarded:
        """One round: members' envelopes sent on first, then the relay's own (frames[name])
        served by own(envelope) -> reply envelope, then the members' replies gathered."""
        replies: dict[str, bytes] = {}
        lost: dict[str, str] = {}
        waiting = set()
        for node, data in frames.items():
            sock = self.links.get(node)
            if sock is not None:
                try:
                    send_frame(sock, data)
                    waiting.add(node)
                except OSError as e:
                    lost[node] = self._drop(node, f"its channel from relay {self.name} failed: {e}")
            elif node == self.name and own is not None:
                continue
            else:
                lost[node] = self.gone.get(node) or (
                    f"node {node} is not a member of relay {self.name}")
        if own is not None and self.name in frames:
            replies[self.name] = own(frames[self.name])
        while waiting:
            for key, _ in self.sel.select():
                node, buf = key.data
                try:
                    got = buf.read(key.fileobj)
                except EOFError:
                    got, why = [], f"its channel from relay {self.name} closed"
                except (OSError, ValueError) as e:   # reset, keepalive ran out, garbage
                    got, why = [], f"its channel from relay {self.name} failed: {e}"
                else:
                    why = "" if len(got) <= 1 and (node in waiting or not got) else (
                        f"it sent relay {self.name} what was not asked for")
                if why:
                    lost[node] = self._drop(node, why)
                    waiting.discard(node)
                elif got:
                    replies[node] = got[0]
                    waiting.discard(node)
        return Forwarded(replies, lost)

    def clocks(self) -> Clocks:
        """Each member's clock offset against this node's (a few measured at once; Cristian's
        bound covers any delay that adds); a member whose echo fails is lost."""
        def one(node: str) -> tuple[str, tuple[int, int] | str]:
            m = self.spec[node]
            try:
                o = measure_offset(m.host, m.echo_port, self.echo_key)
            except (OSError, ValueError) as e:
                return node, f"its clock echo failed (measured by relay {self.name}): {e}"
            return node, (o.offset_ns, o.error_ns)
        offsets, lost = {}, {}
        nodes = self.members
        with cf.ThreadPoolExecutor(max_workers=min(PARALLEL, max(1, len(nodes)))) as pool:
            for node, got in pool.map(one, nodes):
                if isinstance(got, str):
                    lost[node] = self._drop(node, got)
                else:
                    offsets[node] = got
        return Clocks(offsets, lost)

    def _drop(self, node: str, why: str) -> str:
        """The member is lost: its channel closed, every later round told why at once."""
        sock = self.links.pop(node, None)
        if sock is not None:
            self.sel.unregister(sock)
            sock.close()
        self.gone[node] = why
        return why

    def close(self) -> None:
        for node in list(self.links):
            sock = self.links.pop(node)
            self.sel.unregister(sock)
            sock.close()
        self.sel.close()
