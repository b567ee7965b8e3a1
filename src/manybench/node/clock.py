"""Clock offsets between nodes: Cristian's algorithm over a direct TCP echo.

Each node serves an echo for its run (EchoServer); the coordinator, or a relay for its
members, measures the node's offset with measure_offset (the fastest of many exchanges wins;
its RTT/2 bounds the error). Dask's own heartbeat estimate is one unfiltered sample and is
not good enough.

The echo opens only to a peer that proves the run's secret (gate.py, off the serving
thread: a peer that holds the port, slowly or silently, delays no one). Each reply carries,
beside the stamp, an HMAC of the stamp, the request and the connection's session under the
run's echo key, checked once the exchanges are over (so the check adds nothing to a round
trip): a stamp altered or replayed on the way is refused. The stamps are not secret, so
they travel without TLS, whose record layer would lengthen every round trip, and the bound
with it.
"""
from __future__ import annotations

import hmac
import selectors
import socket
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from ..config import timing
from ..security import auth
from .direct import open_channel
from .gate import Door, Gate, drain

ECHO_SAMPLES = 40
REQUEST = 8                 # bytes of a request: its number in the connection
STAMP = struct.Struct("<q")
TAG = 16                    # bytes of a reply's HMAC kept (of 32)
REPLY = STAMP.size + TAG
OPEN_MAX = 64               # opened connections at once; beyond, the longest idle goes


@dataclass(frozen=True)
class Offset:
    offset_ns: int   # node clock minus coordinator clock
    error_ns: int    # bound: half the round trip of the best exchange
    samples: int


def reply_tag(key: bytes, session: bytes, request: bytes, stamp: bytes) -> bytes:
    return auth.tag(key, b"stamp", session, request, stamp)[:TAG]


def answer_one(conn: socket.socket, key: bytes | None, session: bytes,
               clock: Callable[[], int] = time.time_ns) -> bool:
    """Read one request from a ready connection and answer it with the clock, stamped on
    arrival; False when the connection is done (closed, or the run's key gone)."""
    try:
        req = conn.recv(REQUEST, socket.MSG_WAITALL)
        now = clock()
        if len(req) != REQUEST or key is None:
            return False
        stamp = STAMP.pack(now)
        conn.sendall(stamp + reply_tag(key, session, req, stamp))
        return True
    except OSError:
        return False


class EchoServer:
    """This node's echo, on a port of `host`, for the run whose key key() gives (None: no
    run, every connection refused). Its own thread serves the opened connections; the
    handshakes run on `gate` (its own unless shared)."""

    def __init__(self, host: str, key: Callable[[], bytes | None],
                 gate: Gate | None = None, clock: Callable[[], int] = time.time_ns,
                 sock: socket.socket | None = None) -> None:
        """sock: a listening socket to serve (a simulated node's); else one on `host`."""
        self.key, self.clock = key, clock
        self.sock = sock or socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        self.lock = threading.Lock()
        self.new: list[tuple[socket.socket, bytes]] = []
        self.open: OrderedDict[socket.socket, float] = OrderedDict()   # -> last used
        self.closed = False
        self.own_gate = gate is None
        self.gate = gate or Gate()
        self.door = self.gate.open(Door(self.sock, "echo", key, self._opened))
        self.thread = threading.Thread(target=self._serve, name="manybench-echo", daemon=True)
        self.thread.start()

    def _opened(self, conn: socket.socket, session: bytes) -> None:     # the gate's thread
        with self.lock:
            self.new.append((conn, session))
        try:
            self.wake_w.send(b"x")
        except OSError:
            pass

    def _serve(self) -> None:
        while not self.closed:
            idle_s = timing("node.echo_idle")    # an opened connection silent this long is closed
            for k, _ in self.sel.select(idle_s / 4):
                if k.data is None:
                    self._take_new()
                elif not answer_one(k.fileobj, self.key(), k.data, self.clock):
                    self._drop(k.fileobj)
                else:
                    self.open[k.fileobj] = time.monotonic()
                    self.open.move_to_end(k.fileobj)
            idle = time.monotonic() - idle_s
            while self.open and next(iter(self.open.values())) < idle:
                self._drop(next(iter(self.open)))
        for conn in list(self.open):
            self._drop(conn)

    def _take_new(self) -> None:
        drain(self.wake_r)
        with self.lock:
            new, self.new = self.new, []
        for conn, session in new:
            if self.closed:
                conn.close()
                continue
            while len(self.open) >= OPEN_MAX:
                self._drop(next(iter(self.open)))
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(1.0)      # a request's 8 bytes come in one segment
            self.open[conn] = time.monotonic()
            self.sel.register(conn, selectors.EVENT_READ, session)

    def _drop(self, conn: socket.socket) -> None:
        self.open.pop(conn, None)
        try:
            self.sel.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    def close(self) -> None:
        if self.own_gate:
            self.gate.close()
        else:
            self.gate.shut(self.door)
        self.sock.close()
        self.closed = True
        try:
            self.wake_w.send(b"x")
        except OSError:
            pass
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5)


def measure_offset(host: str, port: int, key: bytes, samples: int = ECHO_SAMPLES,
                   timeout: float | None = None) -> Offset:
    """Cristian's algorithm: the exchange with the shortest round trip wins; its node stamp
    is compared with the midpoint of our send and receive, and its RTT/2 bounds the error.
    key: the run's echo key (auth.derive(secret, "echo")); timeout: each exchange's bound,
    node.connect unless given, as a direct channel's handshake: a relay measuring members
    of 1,000 simulated nodes on 2 cpus under a load of ~10 ran past 5 s (test_simulated). ConnectionError when the echo
    closes, or a reply's tag shows its stamp was not the node's."""
    who = f"the clock echo at {host}:{port}"
    timeout = timing("node.connect") if timeout is None else timeout
    s, session = open_channel(host, port, False, key, "echo", None, who, timeout)
    got = []
    with s:
        s.settimeout(timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(samples):
            req = i.to_bytes(REQUEST, "big")
            t1 = time.time_ns()
            s.sendall(req)
            data = s.recv(REPLY, socket.MSG_WAITALL)
            t2 = time.time_ns()
            if len(data) != REPLY:
                raise ConnectionError("clock echo closed the connection")
            got.append((t1, t2, req, data))
    best: tuple[int, int] | None = None   # (rtt, offset)
    for t1, t2, req, data in got:         # checked after: the check costs no round trip
        stamp = data[:STAMP.size]
        if not hmac.compare_digest(data[STAMP.size:], reply_tag(key, session, req, stamp)):
            raise ConnectionError(f"{who} answered a stamp not made with the run's secret")
        rtt = t2 - t1
        offset = STAMP.unpack(stamp)[0] - (t1 + t2) // 2
        if best is None or rtt < best[0]:
            best = (rtt, offset)
    assert best is not None
    return Offset(best[1], (best[0] + 1) // 2, samples)
