"""`net.pingpong` / `net.stream`: TCP between the two ranks of each pair.

Ranks pair up as (2k, 2k+1): the even rank is the server, the odd one the client. With
order = "spread" over several nodes consecutive ranks sit on different nodes, so the pairs
cross the network; on one node they talk over loopback.

  prepare   the server listens (0.0.0.0 or dual-stack ::, port 0 or `port` + k) and
            publishes its port; the client publishes that it is ready
  connect   the client connects to its server's node ("host" from the coordinator) and both
            check a small handshake; a peer that never comes is an error after `peer_timeout`
  run (C)   a warm-up exchange, the wait for T0, the timed loop (native/net.c)
  cleanup   closes the sockets

net.pingpong is OSU's osu_latency over TCP: the client sends `msg_size` bytes, the server
echoes them, `iterations` times; lat_us is the one-way latency, mean round trip / 2.
net.stream is iperf3/qperf tcp_bw: the client sends `msg_size`-byte messages until `size` or
the stonewall (T0 + `duration`, the same instant on both sides); the server counts what
arrives. mb_s is in MB/s of 10^6 bytes (as qperf's MB/sec), gbit_s in 10^9 bits/s (as
iperf3's Gbits/sec); the server's figure is what was received.
"""
from __future__ import annotations

import errno
import socket
import struct
import time
import hmac
from dataclasses import dataclass, replace
from ..status import Status
from types import ModuleType
from typing import Any

from ..config import timing
from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param
from .figures import BANDWIDTH, HIDDEN, LATENCY, LOWER, Figure
from .native import native, result_from_native
from .rank_keys import phase_token

STREAM_DURATION_S = 2.0   # net.stream without size or duration
MAX_MSG = 1 << 30
_MAGIC = b"mbnet\x00\x00\x01"
# magic, client rank, phase, the pair's token (rank_keys.phase_token: only the run's slots
# can make it, so another user's connection is a stranger, dropped)
_HELLO = struct.Struct("!8sII32s")
_ACK = b"mbnet-ok"

_COMMON = {
    "port": Param("int", "Listening port base: the server of pair k (ranks 2k, 2k+1) listens "
                         "on port + k. Unset: an ephemeral port (firewalls may want a fixed "
                         "range).", minimum=1, maximum=65535),
    "sndbuf": Param("size", "SO_SNDBUF of both ends (as iperf3 -w). Unset: the kernel's "
                            "autotuning. Capped by net.core.wmem_max: a capped value is an "
                            "error, not a silent change.", minimum=1),
    "rcvbuf": Param("size", "SO_RCVBUF of both ends, set before listen/connect so the window "
                            "scale fits. Unset: autotuning. Capped by net.core.rmem_max.",
                    minimum=1),
    "poll": Param("choice", "block: blocking send/recv (as qperf and iperf3); busy: "
                            "non-blocking calls spun until they complete (as MPI libraries "
                            "poll; only with a core per slot).", default="block",
                  choices=("block", "busy")),
    "peer_timeout": Param("duration", "How long to wait for the peer to connect and, later, "
                                      "for any progress from it before the pair fails.",
                          default="30s", minimum=0.001),
}


@dataclass
class _State:
    lib: ModuleType
    kernel: str
    rank: int
    server: bool
    params: dict
    hello: bytes                     # what this pair's client sends, what its server expects
    listener: socket.socket | None = None
    sock: socket.socket | None = None
    port: int = 0
    peer: str = ""                   # host:port of the other end, for messages
    host: str = ""                   # this node's address its peers reach (SlotContext.host)
    error: str = ""                  # a connect failure, reported by run

    @property
    def role(self) -> str:
        return "server" if self.server else "client"

    @property
    def partner(self) -> int:
        return self.rank + 1 if self.server else self.rank - 1

    def label(self) -> str:
        other = "client" if self.server else "server"
        where = f", {other} {self.peer}" if self.peer else ""
        return f"{self.kernel} rank {self.rank} ({self.role}, pair with rank {self.partner}{where})"


# ---- before T0 -------------------------------------------------------------------------------

def _fail(st: _State, text: str) -> KernelError:
    return KernelError(f"{st.label()}: {text}")


def _buffers(st: _State, s: socket.socket) -> None:
    """SO_SNDBUF/SO_RCVBUF as asked, or an error naming the sysctl that capped them."""
    for opt, name, sysctl in ((socket.SO_SNDBUF, "sndbuf", "wmem_max"),
                              (socket.SO_RCVBUF, "rcvbuf", "rmem_max")):
        want = st.params.get(name)
        if not want:
            continue
        s.setsockopt(socket.SOL_SOCKET, opt, min(want, 2**31 - 1))   # an int, whatever asked
        got = s.getsockopt(socket.SOL_SOCKET, opt) // 2   # Linux reports twice what it keeps
        if got < want:
            raise _fail(st, f"{name} = {want} bytes, but the kernel allows {got} (raise "
                            f"net.core.{sysctl} with sysctl, or ask for less)")


def _listen(st: _State, port: int) -> socket.socket:
    """The server's socket: on this node's address its partner dials (the host the engine
    publishes), or on every interface when the node does not hold that address (NAT)."""
    try:
        return _listen_on(st, st.host, port) if st.host else _listen_on(st, "", port)
    except OSError as e:
        if e.errno != errno.EADDRNOTAVAIL:
            raise
    return _listen_on(st, "", port)


def _listen_on(st: _State, host: str, port: int) -> socket.socket:
    dual = not host and socket.has_dualstack_ipv6()
    family = socket.AF_INET6 if dual or ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if dual:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        _buffers(st, s)   # the accepted socket inherits them
        s.bind((host or ("::" if dual else "0.0.0.0"), port))
        s.listen(8)
    except OSError as e:
        s.close()
        if e.errno == errno.EADDRNOTAVAIL and host:
            raise
        hint = (" (another program or run holds it: choose another `port`, or leave it unset)"
                if e.errno == errno.EADDRINUSE else "")
        raise _fail(st, f"cannot listen on port {port}: {e.strerror or e}{hint}") from None
    except BaseException:
        s.close()
        raise
    return s


def _params(kernel: Kernel, params: dict) -> dict:
    """The kernel's values with defaults filled in (a caller may leave defaults out)."""
    out = dict(params)
    for name, spec in kernel.params.items():
        if out.get(name) is None and spec.default is not None:
            out[name] = spec.parse(spec.default)
    return out


def _even_workers(params: dict, workers: int, slot_cpus: int | None) -> list[tuple[str, str]]:
    if workers % 2:
        return [("workers", f"net kernels pair ranks (2k, 2k+1): use an even worker count, "
                            f"not {workers}")]
    return []


def _prepare(kernel: Kernel, ctx: SlotContext, params: dict) -> _State:
    lib = native()
    p = _params(kernel, params)
    if ctx.workers % 2 and ctx.rank == ctx.workers - 1:
        raise KernelError(f"{kernel.name} rank {ctx.rank}: no partner: net kernels pair ranks "
                          f"(2k, 2k+1): use an even worker count (this phase has "
                          f"{ctx.workers})")
    client = ctx.rank | 1
    try:
        token = phase_token(ctx.job_key, "net", ctx.run, ctx.phase, ctx.task, ctx.rep,
                            ctx.variant, client)
    except ValueError as e:
        raise KernelError(f"{kernel.name} rank {ctx.rank}: {e}") from None
    st = _State(lib=lib, kernel=kernel.name, rank=ctx.rank, server=ctx.rank % 2 == 0, params=p,
                hello=_HELLO.pack(_MAGIC, client, ctx.phase & 0xFFFFFFFF, token),
                host=ctx.host)
    if st.server:
        port = p.get("port") or 0
        if port:
            port += ctx.rank // 2
            if port > 65535:
                raise _fail(st, f"port {port} (port + pair index) is above 65535")
        st.listener = _listen(st, port)
        st.port = st.listener.getsockname()[1]
    return st


def _publish(st: _State) -> dict:
    return {"role": st.role, "port": st.port} if st.server else {"role": st.role}


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError(errno.ECONNRESET, "closed during the handshake")
        data += chunk
    return data


def _accept(st: _State, deadline: float) -> socket.socket:
    """The pair's client, recognised by its hello; strangers are dropped."""
    stranger = ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _fail(st, f"no connection from the client within "
                            f"{st.params['peer_timeout']:g} s (peer_timeout)"
                            + (f"; dropped a stranger: {stranger}" if stranger else "")
                            + " (a firewall between the nodes?)")
        st.listener.settimeout(left)
        try:
            conn, addr = st.listener.accept()
        except socket.timeout:
            continue
        try:
            conn.settimeout(max(0.001, deadline - time.monotonic()))
            hello = _recv_exact(conn, _HELLO.size)
            if hmac.compare_digest(hello, st.hello):
                conn.sendall(_ACK)
                host, port = addr[0], addr[1]
                if host.startswith("::ffff:"):   # an IPv4 peer on the dual-stack socket
                    host = host[7:]
                st.peer = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                return conn
            stranger = f"{addr[0]} sent an unexpected hello"
        except OSError as e:
            stranger = f"{addr[0]}: {e.strerror or e}"
        conn.close()


def _dial(st: _State, host: str, port: int, deadline: float) -> socket.socket:
    st.peer = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    last = ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _fail(st, f"cannot connect within {st.params['peer_timeout']:g} s "
                            f"(peer_timeout): {last or 'timed out'}")
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise _fail(st, f"cannot resolve {host}: {e.strerror or e}") from None
        for fam, typ, proto, _, addr in infos:
            s = socket.socket(fam, typ, proto)
            try:
                _buffers(st, s)
                s.settimeout(max(0.001, deadline - time.monotonic()))
                s.connect(addr)
                s.sendall(st.hello)
                if _recv_exact(s, len(_ACK)) != _ACK:
                    raise ConnectionError(errno.EPROTO, "not a manybench net server")
                return s
            except KernelError:
                s.close()
                raise
            except OSError as e:
                s.close()
                last = e.strerror or str(e) or type(e).__name__
        time.sleep(min(timing("kernels.net_retry"), max(0.0, deadline - time.monotonic())))


def _configure(st: _State, s: socket.socket) -> None:
    """Blocking again (the C loop), TCP_NODELAY as asked, and a bound on a silent peer."""
    s.settimeout(None)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if st.params["nodelay"] else 0)
    t = st.params["peer_timeout"]
    tv = struct.pack("ll", int(t), int((t - int(t)) * 1e6))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)


def _connect(st: _State, peers: dict[int, dict]) -> None:
    """Connect the pair. Failures are kept for run() to report as this slot's error."""
    try:
        peers = {int(k): v for k, v in (peers or {}).items()}
        info = peers.get(st.partner)
        if info is None:
            raise _fail(st, f"rank {st.partner} is not ready (its prepare failed: see its "
                            "record)")
        deadline = time.monotonic() + st.params["peer_timeout"]
        if st.server:
            s = _accept(st, deadline)
            st.listener.close()
            st.listener = None
        else:
            if "port" not in info or "host" not in info:
                raise _fail(st, f"rank {st.partner} published no address ({info!r})")
            s = _dial(st, str(info["host"]), int(info["port"]), deadline)
        st.sock = s
        _configure(st, s)
    except KernelError as e:
        st.error = str(e)
    except OSError as e:
        st.error = f"{st.label()}: connecting: {e.strerror or e}"


# ---- the timed run ---------------------------------------------------------------------------

def _explain(st: _State):
    return lambda err, text: f"{st.label()}: {text}"


def _run_pingpong(st: _State, t0_ns: int, spin_ns: int) -> Result:
    if st.error:
        return Result(status=Status.ERROR, error=st.error)
    p = st.params
    d = st.lib.net_pingpong(st.sock.fileno(), st.server, p["poll"] == "busy", p["msg_size"],
                            p["iterations"], p["warmup"], round(p["peer_timeout"] * 1e9),
                            t0_ns, spin_ns)
    metrics = {}
    if d["span_ops"]:   # one-way latency as OSU reports it: mean round trip / 2
        metrics["lat_us"] = d["span_ns"] / d["span_ops"] / 2 / 1e3
    metrics["role"] = st.role
    return _count_once(result_from_native(d, _explain(st), metrics=metrics), st.server)


def _run_stream(st: _State, t0_ns: int, spin_ns: int) -> Result:
    if st.error:
        return Result(status=Status.ERROR, error=st.error)
    p = st.params
    size = p.get("size") or 0
    duration = p.get("duration")
    if duration is None and not size:
        duration = STREAM_DURATION_S
    deadline = t0_ns + round(duration * 1e9) if duration else 0
    d = st.lib.net_stream(st.sock.fileno(), st.server, p["poll"] == "busy", p["msg_size"],
                          size, deadline, p["warmup"], round(p["peer_timeout"] * 1e9),
                          t0_ns, spin_ns)
    metrics = {}
    if d["elapsed_ns"] > 0:
        rate = d["bytes"] / (d["elapsed_ns"] / 1e9)
        metrics["mb_s"] = rate / 1e6
        metrics["gbit_s"] = rate * 8 / 1e9
    metrics["role"] = st.role
    return _count_once(result_from_native(d, _explain(st), metrics=metrics), not st.server)


def _count_once(res: Result, other_end: bool) -> Result:
    """A pair's traffic is counted once, so aggregate bandwidth is what crossed the wire:
    the client of a ping-pong and the receiver of a stream keep `bytes`; the other end moves
    its count to metrics.endpoint_bytes."""
    if other_end:
        return replace(res, bytes=0, metrics={**res.metrics, "endpoint_bytes": res.bytes})
    return res


def _cleanup(st: _State) -> None:
    for name in ("sock", "listener"):
        s = getattr(st, name)
        if s is not None:
            setattr(st, name, None)
            s.close()


def _check(params: dict) -> list[tuple[str, str]]:
    out = []
    if (params.get("msg_size") or 0) > MAX_MSG:
        out.append(("msg_size", f"at most {MAX_MSG} bytes (1GiB): each slot holds one "
                                "message buffer"))
    if params.get("duration") is not None and params["duration"] <= 0:
        out.append(("duration", "must be positive"))
    return out


# bookkeeping of a pair: which end a record is, and the bytes its own end moved
_PAIR = (Figure("role", "", role=HIDDEN, direction=""),
         Figure("endpoint_bytes", "", role=HIDDEN, direction=""))
LAT_US = Figure("lat_us", "us", "one-way latency", LOWER, headline=True,
                note="one-way latency = mean round trip / 2 (OSU's osu_latency)")
# both ends of a pair report the same transfer: a phase's figure is the median, not a sum
MB_S = Figure("mb_s", "MB/s", "MB/s per pair")
GBIT_S = Figure("gbit_s", "Gbit/s", "Gbit/s per pair")


def _kernel(name: str, doc: str, params: dict, run: Any, figures: tuple[Figure, ...]
            ) -> Kernel:
    box: list[Kernel] = []
    k = Kernel(name=name, doc=doc, params=params,
               prepare=lambda ctx, prm: _prepare(box[0], ctx, prm), run=run,
               cleanup=_cleanup, check=_check, publish=_publish, connect=_connect,
               check_placement=_even_workers, figures=figures + _PAIR,
               progress="bytes")
    box.append(k)
    return k


PINGPONG = _kernel(
    "net.pingpong",
    "TCP ping-pong between the ranks of each pair (2k server, 2k+1 client), as OSU's "
    "osu_latency: the client sends `msg_size` bytes and the server echoes them, `iterations` "
    "times. lat_us = one-way latency = mean round trip / 2; lat_p50_us, lat_p99_us, ... from "
    "the histogram of round trip / 2 (the server's from the time between its receives). "
    "bytes = 2 x msg_size x iterations. Needs an even worker count.",
    {"msg_size": Param("size", "Bytes per message (sweep it as OSU: [8, \"1KiB\", \"64KiB\"]).",
                       default=8, minimum=1),
     "iterations": Param("int", "Timed round trips.", default=10000, minimum=1),
     "warmup": Param("int", "Untimed round trips before T0 (as OSU's skip).", default=100,
                     minimum=0),
     "nodelay": Param("bool", "TCP_NODELAY on both ends: Nagle's algorithm never holds back "
                              "a message's last segment.", default=True),
     **_COMMON},
    _run_pingpong, (LAT_US, LATENCY.first()))

STREAM = _kernel(
    "net.stream",
    "TCP bulk transfer from the client (odd rank) to the server (even rank) of each pair, as "
    "iperf3 or qperf tcp_bw: `msg_size`-byte sends until `size` bytes or the stonewall T0 + "
    "`duration` (2 s when neither is given), whichever comes first. mb_s = 10^6 bytes/s, "
    "gbit_s = 10^9 bits/s, on both sides; the server's is what it received by the stonewall. "
    "Needs an even worker count.",
    {"msg_size": Param("size", "Bytes per send (as iperf3 -l).", default="1MiB", minimum=1),
     "duration": Param("duration", "Stonewall: stop at T0 + duration, the same instant on "
                                   "both sides (default 2 s when no `size` is given)."),
     "size": Param("size", "Bytes to send; with `duration` too, whichever comes first.",
                   minimum=1),
     "warmup": Param("int", "Untimed messages sent before T0 (the connection's slow start "
                            "is paid there).", default=4, minimum=0),
     "nodelay": Param("bool", "TCP_NODELAY on both ends. Off by default, as iperf3 (its -N "
                              "turns it on): small messages are coalesced by Nagle.",
                      default=False),
     **_COMMON},
    _run_stream, (BANDWIDTH.first(), MB_S.first(), GBIT_S))

KERNELS = [PINGPONG, STREAM]
