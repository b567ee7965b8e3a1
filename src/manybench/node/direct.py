"""The agent's own socket for its run's coordinator: the direct channel (issue 21).

On Dask every phase used to cost a hop through the worker process (its event loop relayed
each request and reply); now the agent listens on a TCP port of its own, opened at the run's
Start, and the coordinator (engines/direct.py) sends it the run's requests there. Dask still
starts, finds, watches and stops the node, and hands the agent the run's secret in Start.

A connection opens only once it has proved the run's secret (gate.py: a challenge answered
with an HMAC, off the agent's loop, within one deadline, in frames of a few KiB), so only
the coordinator that started the run, or its relays, drive the node. On a secured cluster
the channel is TLS with the cluster's own certificates (the worker's; the coordinator must
present a certificate of the same authority), or there is no direct channel at all
(dask_plugin.direct_config says why).

Frames: the length of the envelope (4 bytes, big-endian), then the envelope (protocol.encode).

The connecting side is here too (connect, FrameBuffer): the coordinator opens these channels
(engines/direct.py), and so does a relay to its members (relay.py).
"""
from __future__ import annotations

import collections
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass

from ..config import timing
from ..security import auth
from .gate import PRE_AUTH_MAX, Door, Gate, Refused, answer

FRAME = struct.Struct("!I")
MAX_FRAME = 1 << 30          # a length beyond this is not ours: the connection is dropped
READ_MAX = 1 << 20           # what one read of a ready socket takes at most
_scratch = threading.local()


def read_some(sock: socket.socket) -> bytes:
    """What one read of a ready socket gives (b"": it closed), up to READ_MAX bytes, into a
    buffer of this thread's kept for every read: sock.recv(READ_MAX) allocates READ_MAX
    bytes each time (~12 us a read here, a 1,000-node go reads ~2,000 frames)."""
    view = getattr(_scratch, "view", None)
    if view is None:
        view = _scratch.view = memoryview(bytearray(READ_MAX))
    n = sock.recv_into(view)
    return view[:n].tobytes()


DirectRefused = Refused      # the node answered our Hello with Failed(why)


@dataclass(frozen=True)
class TlsFiles:
    """The node's certificate authority, certificate and key, as files."""
    ca: str
    cert: str
    key: str


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(FRAME.pack(len(data)) + data)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """n bytes; EOFError when the peer closes first."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise EOFError("the connection closed")
        got += k
    return bytes(buf)


def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> bytes:
    """The next frame's envelope; EOFError when the peer closed, ValueError for a length
    beyond `limit` (not ours). A small frame comes in one read (its peer sends one frame and
    waits: nothing beyond it can be read here)."""
    head = sock.recv(min(65536, limit + FRAME.size))
    if not head:
        raise EOFError("the connection closed")
    if len(head) < FRAME.size:
        head += recv_exactly(sock, FRAME.size - len(head))
    (n,) = FRAME.unpack_from(head)
    if n > limit:
        raise ValueError(f"a frame of {n} bytes: not a manybench peer")
    got = len(head) - FRAME.size
    if got > n:
        raise ValueError("more than one frame at once: not a manybench peer")
    return head[FRAME.size:] + recv_exactly(sock, n - got) if got < n else head[FRAME.size:]


def server_context(tls: TlsFiles) -> ssl.SSLContext:
    """TLS as the cluster's workers speak it: their certificate, peers of the same authority
    only (Dask's own choice: no host name check, clusters are reached by address)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tls.ca)
    ctx.load_cert_chain(tls.cert, tls.key)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def client_context(tls: TlsFiles) -> ssl.SSLContext:
    """TLS to another node's channel as the cluster's peers speak it: this node's
    certificate, the same authority, no host name check (Dask's own choice)."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=tls.ca)
    ctx.load_cert_chain(tls.cert, tls.key)
    ctx.check_hostname = False
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def tune(sock: socket.socket) -> None:
    """No Nagle delay on small frames; keepalive probes, so a peer that vanished (its host
    down, a cable pulled) ends the connection instead of leaving it open for good."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for opt, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, opt):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), value)


def open_channel(host: str, port: int, tls: bool, key: bytes, use: str,
                 ctx: ssl.SSLContext | None, who: str, timeout: float | None = None
                 ) -> tuple[socket.socket, bytes]:
    """A channel a node serves for the run (gate.py), open: connected, TLS where it listens
    with it, the handshake done, all within `timeout` (node.connect unless given); and its
    session (both nonces).
    DirectRefused (the node's reason), ValueError (not the run's node), ProtocolMismatch or
    OSError otherwise."""
    deadline = time.monotonic() + (timing("node.connect") if timeout is None else timeout)

    def left(sock: socket.socket) -> socket.socket:
        rest = deadline - time.monotonic()
        if rest <= 0:
            raise TimeoutError(f"{who}: no handshake within {timeout:g}s")
        sock.settimeout(rest)
        return sock
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        if tls:
            if ctx is None:
                raise ssl.SSLError(f"{who} listens with TLS and there are no certificates here")
            sock = ctx.wrap_socket(left(sock), server_hostname=host)
        session = answer(sock, key, use, lambda s: recv_frame(left(s), PRE_AUTH_MAX),
                         lambda s, data: send_frame(left(s), data), who)
    except BaseException:
        sock.close()
        raise
    return sock, session


def connect(host: str, port: int, tls: bool, secret: str, ctx: ssl.SSLContext | None,
            who: str) -> socket.socket:
    """A node's direct channel, open and tuned; as open_channel otherwise."""
    sock, _ = open_channel(host, port, tls, auth.derive(secret, "direct"), "direct", ctx, who)
    tune(sock)
    sock.settimeout(timing("node.frame_io"))   # a frame begun is sent or read whole by then
    return sock


class FrameBuffer:
    """Frames out of the bytes read so far from a socket that is read when ready."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def read(self, sock: socket.socket) -> list[bytes]:
        """The frames now complete after one read of a ready socket; EOFError when it
        closed, ValueError for a length that is not ours, OSError as the socket raises."""
        chunk = read_some(sock)
        while isinstance(sock, ssl.SSLSocket) and sock.pending():
            chunk += sock.recv(sock.pending())
        if not chunk:
            raise EOFError("closed")
        buf = self.buf
        if not buf and len(chunk) >= FRAME.size:
            # the usual read: one whole frame (a node answers one request with one frame),
            # taken from the chunk as it is, not copied through the buffer and out again
            (n,) = FRAME.unpack_from(chunk)
            if n == len(chunk) - FRAME.size:
                return [chunk[FRAME.size:]]
        buf += chunk
        out = []
        while len(buf) >= FRAME.size:
            (n,) = FRAME.unpack_from(buf)
            if n > MAX_FRAME:
                raise ValueError("garbage")
            if len(buf) < FRAME.size + n:
                break
            out.append(bytes(buf[FRAME.size:FRAME.size + n]))
            del buf[:FRAME.size + n]
        return out


class Listener:
    """The agent's socket for the run's coordinator, on any free port of `host` ("": every
    interface). Connections are authenticated off the caller's loop (gate.py); the caller
    selects on this object and takes the next open one with take()."""

    def __init__(self, secret: str, tls: TlsFiles | None = None, host: str = "",
                 gate: Gate | None = None) -> None:
        """gate: the handshakes' thread, when shared (simulated nodes); else one of its own."""
        if not secret:
            raise ValueError("a direct channel needs the run's secret")
        self.key = auth.derive(secret, "direct")
        self.ctx = server_context(tls) if tls else None
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.opened: collections.deque[socket.socket] = collections.deque()
        self.ready_r, self.ready_w = socket.socketpair()     # a byte per opened connection
        self.ready_r.setblocking(False)
        self.own_gate = gate is None
        self.gate = gate or Gate()
        self.door = self.gate.open(Door(self.sock, "direct", lambda: self.key, self._opened,
                                        self.ctx))

    @property
    def tls(self) -> bool:
        return self.ctx is not None

    def fileno(self) -> int:
        return self.ready_r.fileno()

    def _opened(self, conn: socket.socket, session: bytes) -> None:      # the gate's thread
        self.opened.append(conn)
        self.ready_w.send(b"x")

    def take(self) -> socket.socket | None:
        """The next authenticated connection, tuned; None when there is none now."""
        try:        # one byte per opened connection: those left keep the socket readable
            self.ready_r.recv(1)
        except BlockingIOError:
            pass
        if not self.opened:
            return None
        conn = self.opened.popleft()
        conn.settimeout(None)
        tune(conn)
        return conn

    def accept(self, timeout: float | None = None) -> socket.socket | None:
        """Wait up to `timeout` (None: for good) for the next authenticated connection."""
        import select   # noqa: PLC0415
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            conn = self.take()
            if conn is not None:
                return conn
            rest = None if deadline is None else deadline - time.monotonic()
            if rest is not None and rest <= 0:
                return None
            select.select([self.ready_r], [], [], rest)

    def close(self) -> None:
        if self.own_gate:
            self.gate.close()
        else:
            self.gate.shut(self.door)
        self.sock.close()
        while self.opened:
            self.opened.popleft().close()
        self.ready_r.close()
        self.ready_w.close()
