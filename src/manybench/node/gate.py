"""The door of every port a node opens for a run (the agent's direct channel, the clock echo):
connections are accepted and authenticated off the serving loop, so no connection, however
slow, silent or many, delays a phase.

A connection must, within node.handshake (config/) of its accept, in all: finish TLS (where
the cluster is secured), read our Challenge(nonce, use) and answer Hello(nonce, proof) whose
proof is the HMAC of both nonces under the run's key for this use (security/auth.py); it then gets
Welcome(proof of ours) and is handed to the server. Before that no frame may exceed
PRE_AUTH_MAX bytes (nothing large is ever allocated for a stranger), and nothing it sends
is acted on. Failing any of it, it gets Failed(why) when it can take it, and is closed.

One thread drives every pending connection without blocking (one selector); at most
PENDING_MAX wait at once, the oldest dropped first, so a flood of connections cannot keep
the run's own out for long. The thread holds FORK_LOCK while it works, and the process's
forks take it first (os.register_at_fork): a slot forked by the agent never inherits a lock
(OpenSSL's, say) this thread held at that instant.
"""
from __future__ import annotations

import errno
import os
import selectors
import socket
import ssl
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from ..config import timing
from ..security import auth
from .protocol import (Challenge, Failed, Hello, ProtocolMismatch, Welcome, check_version,
                       decode, encode)

PRE_AUTH_MAX = 4096        # the largest frame a connection may send before it is authenticated
PENDING_MAX = 256          # connections in their handshake at once; beyond, the oldest goes
FRAME = struct.Struct("!I")
FORK_LOCK = threading.Lock()
os.register_at_fork(before=FORK_LOCK.acquire, after_in_parent=FORK_LOCK.release,
                    after_in_child=FORK_LOCK.release)


def proof(key: bytes, side: bytes, use: str, server_nonce: bytes, client_nonce: bytes) -> bytes:
    """The proof one side gives: "hello" from the connecting side, "welcome" from the node."""
    return auth.tag(key, side, use.encode(), server_nonce, client_nonce)


class _Pending:
    """One connection in its handshake: a small state machine stepped when its socket is ready."""

    def __init__(self, sock: socket.socket, ctx: ssl.SSLContext | None, deadline: float) -> None:
        sock.setblocking(False)
        self.sock = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False) \
            if ctx is not None else sock
        self.tls = ctx is not None        # a TLS handshake still to finish
        self.deadline = deadline
        self.nonce = auth.nonce()
        self.session = b""                # both nonces, once welcomed: what the channel may bind
        self.out = b""                    # to send before the next step
        self.inbuf = b""
        self.greeted = False              # our Challenge is queued
        self.verdict: bool | None = None  # True: welcomed; False: refused (closing after out)
        self.want = selectors.EVENT_READ

    def step(self, key: bytes | None, use: str) -> str:
        """Advance as far as the socket allows: "wait" (self.want says on what), "open"
        (authenticated, nothing left to send) or "closed"."""
        try:
            if self.tls:
                self.sock.do_handshake()
                self.tls = False
            if not self.greeted:
                self.out += _frame(encode(Challenge(self.nonce, use)))
                self.greeted = True
            if self.out:
                self.want = selectors.EVENT_WRITE
                n = self.sock.send(self.out)
                self.out = self.out[n:]
                if self.out:
                    return "wait"
            if self.verdict is not None:
                return "open" if self.verdict else "closed"
            self.want = selectors.EVENT_READ
            chunk = self.sock.recv(PRE_AUTH_MAX + FRAME.size - len(self.inbuf))
            if not chunk:
                return "closed"
            self.inbuf += chunk
            if len(self.inbuf) < FRAME.size:
                return "wait"
            (n,) = FRAME.unpack_from(self.inbuf)
            if n > PRE_AUTH_MAX or len(self.inbuf) > FRAME.size + n:
                return "closed"            # not ours: nothing more is read
            if len(self.inbuf) < FRAME.size + n:
                return "wait"
            reply = self._answer(self.inbuf[FRAME.size:], key, use)
            self.out = _frame(encode(reply))
            self.verdict = isinstance(reply, Welcome)
            return self.step(key, use)
        except ssl.SSLWantReadError:
            self.want = selectors.EVENT_READ
            return "wait"
        except ssl.SSLWantWriteError:
            self.want = selectors.EVENT_WRITE
            return "wait"
        except (BlockingIOError, InterruptedError):   # self.want says on what it waits
            return "wait"
        except (OSError, ValueError):      # TLS refused, reset, not our framing
            return "closed"

    def _answer(self, data: bytes, key: bytes | None, use: str) -> object:
        """Welcome for a Hello that proves the run's secret; Failed(why) for anything else."""
        try:
            hello = decode(data, "the peer")
            if not isinstance(hello, Hello):
                return Failed(f"a channel opens with Hello, not {type(hello).__name__}")
            check_version(hello.protocol, "the peer")
        except (ProtocolMismatch, ValueError, TypeError) as e:
            return Failed(str(e))
        if key is None:
            return Failed("this node serves no run now")
        if not (isinstance(hello.nonce, bytes) and len(hello.nonce) == auth.NONCE
                and auth.valid(key, hello.proof, b"hello", use.encode(), self.nonce,
                               hello.nonce)):
            return Failed("wrong secret: this node serves only the coordinator that started "
                          "its run")
        self.session = self.nonce + hello.nonce
        return Welcome(proof(key, b"welcome", use, self.nonce, hello.nonce))


def _frame(data: bytes) -> bytes:
    return FRAME.pack(len(data)) + data


@dataclass(frozen=True)
class Door:
    """One listening socket the gate watches: for which use, with which key (the run's key
    now; None refuses every connection), TLS or not, and who takes the opened ones (called
    from the gate's thread with the socket, blocking again, and the session: both nonces,
    for a channel that binds its later messages to this connection)."""
    server: socket.socket
    use: str
    key: Callable[[], bytes | None]
    on_open: Callable[[socket.socket, bytes], None]
    ctx: ssl.SSLContext | None = None


class Gate:
    """One thread that accepts on every door given it and drives their connections'
    handshakes (several nodes of a simulated cluster share one)."""

    def __init__(self, handshake_s: float | None = None, pending_max: int = PENDING_MAX) -> None:
        # TLS, Challenge, Hello and Welcome in all, from the accept (node.handshake): long
        # enough for a peer starved of cpu (a relay measuring 8 members at once among 1,000
        # simulated nodes on 2 loaded cpus took over 5 s), short enough that a stranger holds
        # a place briefly; off the serving loop either way
        self.handshake_s = timing("node.handshake") if handshake_s is None else handshake_s
        self.pending_max = pending_max
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        self.doors: dict[int, Door] = {}
        # doors to add or remove, and events to set once done: applied by the loop
        self.changes: list[tuple[str, Any]] = []
        self.pending: OrderedDict[_Pending, Door] = OrderedDict()   # oldest first
        self.closed = False
        self.refused = 0          # connections closed without being opened
        self.thread = threading.Thread(target=self._loop, name="mb-gate", daemon=True)
        self.thread.start()

    def open(self, door: Door) -> Door:
        """Watch a listening socket from now on."""
        door.server.setblocking(False)
        with FORK_LOCK:
            self.changes.append(("add", door))
        self._wake()
        return door

    def shut(self, door: Door) -> None:
        """Stop watching it (its pending connections are closed; the socket is the caller's)."""
        done = threading.Event()
        with FORK_LOCK:
            self.changes.append(("remove", door))
            self.changes.append(("done", done))
        self._wake()
        if threading.current_thread() is not self.thread:
            done.wait(5)

    def _wake(self) -> None:
        try:
            self.wake_w.send(b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        while not self.closed:
            timeout = None
            if self.pending:
                timeout = max(0.0, min(p.deadline for p in self.pending) - time.monotonic())
            events = self.sel.select(timeout)
            with FORK_LOCK:
                if self.closed:
                    break
                for k, _ in events:
                    if k.fileobj is self.wake_r:
                        drain(self.wake_r)
                    elif isinstance(k.data, Door):
                        self._accept(k.data)
                    elif k.data in self.pending:   # not dropped by an accept before it
                        self._step(k.data)
                self._apply()
                self._expire()
        with FORK_LOCK:
            for p in list(self.pending):
                self._drop(p)
            self._apply()
        self.sel.close()
        self.wake_r.close()

    def _apply(self) -> None:
        changes, self.changes = self.changes, []
        for what, door in changes:
            if what == "done":
                door.set()
            elif what == "add":
                self.doors[door.server.fileno()] = door
                self.sel.register(door.server, selectors.EVENT_READ, door)
            elif what == "remove":
                if self.doors.pop(door.server.fileno(), None) is not None:
                    self.sel.unregister(door.server)
                for p in [p for p, d in self.pending.items() if d is door]:
                    self._drop(p)

    def _accept(self, door: Door) -> None:
        while True:
            try:
                conn, _ = door.server.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE) and self.pending:
                    self._drop(next(iter(self.pending)))   # out of descriptors: free one
                    continue
                # nothing of ours to free: leave the connection queued a moment, not spin on
                # a socket that stays readable
                time.sleep(0.05)
                return
            while len(self.pending) >= self.pending_max:
                self._drop(next(iter(self.pending)))
            try:
                p = _Pending(conn, door.ctx, time.monotonic() + self.handshake_s)
            except (OSError, ValueError):
                _close(conn)
                self.refused += 1
                continue
            self.pending[p] = door
            self.sel.register(p.sock, p.want, p)
            self._step(p)

    def _step(self, p: _Pending) -> None:
        door = self.pending[p]
        state = p.step(door.key(), door.use)
        if state == "wait":
            self.sel.modify(p.sock, p.want, p)
            return
        self.sel.unregister(p.sock)
        del self.pending[p]
        if state == "closed":
            self.refused += 1
            _close(p.sock)
            return
        p.sock.setblocking(True)
        try:
            door.on_open(p.sock, p.session)
        except Exception:
            _close(p.sock)

    def _expire(self) -> None:
        now = time.monotonic()
        for p in [p for p in self.pending if p.deadline <= now]:
            self._drop(p)

    def _drop(self, p: _Pending) -> None:
        self.sel.unregister(p.sock)
        del self.pending[p]
        self.refused += 1
        _close(p.sock)

    def close(self) -> None:
        """Stop the thread; every pending connection is closed (the doors' sockets are their
        owners')."""
        self.closed = True
        self._wake()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)
        self.wake_w.close()


def drain(sock: socket.socket) -> None:
    """Empty a non-blocking wake-up socket (its bytes only say: look)."""
    try:
        while sock.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


class Refused(Exception):
    """The node answered our Hello with Failed(why)."""


def answer(sock: socket.socket, key: bytes, use: str, read: Callable[[socket.socket], bytes],
           send: Callable[[socket.socket, bytes], None], who: str) -> bytes:
    """The connecting side's handshake, on a blocking socket: read the Challenge, prove the
    run's secret, check the node's proof. Refused(the node's why) when it refuses us,
    ValueError for a peer that does not prove the secret (not the run's node),
    ProtocolMismatch for another version. Returns the session (both nonces)."""
    challenge = decode(read(sock), who)
    if not isinstance(challenge, Challenge) or challenge.use != use or not isinstance(
            challenge.nonce, bytes) or len(challenge.nonce) != auth.NONCE:
        raise ValueError(f"{who} did not open with a challenge for {use!r}: not a manybench "
                         "channel of this protocol")
    mine = auth.nonce()
    send(sock, encode(Hello(mine, proof(key, b"hello", use, challenge.nonce, mine))))
    reply = decode(read(sock), who)
    if isinstance(reply, Failed):
        raise Refused(reply.error)
    if not (isinstance(reply, Welcome) and auth.valid(
            key, reply.proof, b"welcome", use.encode(), challenge.nonce, mine)):
        raise ValueError(f"{who} did not prove the run's secret: not the run's node")
    return challenge.nonce + mine
