"""The slots of one phase as a group: rank 0 listens, every other rank connects to it before
T0, and inside the timed window they agree on a number (the largest of theirs), as IOR's
tasks do with MPI_Allreduce at a stonewall. Nodes reach each other by the hosts the engine
adds to every rank's published info.

A rank proves it is one of the phase's slots by the group's token (rank_keys.phase_token:
only the run's slots can make it); a connection that does not, or says nothing within
mpi.peer_hello (config/), is dropped and rank 0 goes on waiting for its own, so no other
user can join the group and feed it a number.
"""
from __future__ import annotations

import hmac
import socket
import struct
import time

from ..config import timing
from .base import KernelError

_INT = struct.Struct("!q")


def _listen(host: str) -> socket.socket:
    """Rank 0's socket on `host`, or on every interface when this node does not hold it."""
    if host:
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            return socket.create_server((host, 0), family=family)
        except OSError:
            pass
    if socket.has_dualstack_ipv6():
        return socket.create_server(("", 0), family=socket.AF_INET6, dualstack_ipv6=True)
    return socket.create_server(("", 0))


def _recv(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("a peer closed the connection")
        data += chunk
    return data


class Group:
    def __init__(self, rank: int, workers: int, timeout: float, label: str, token: bytes,
                 host: str = "") -> None:
        """token: the group's (rank_keys.phase_token); host: this node's address its peers
        reach (rank 0 listens there, on every interface when the node does not hold it)."""
        self.rank, self.workers, self.timeout, self.label = rank, workers, timeout, label
        self.token = token
        self.listener: socket.socket | None = None
        self.socks: list[socket.socket] = []
        self.strangers = 0
        if rank == 0 and workers > 1:
            self.listener = _listen(host)

    def published(self) -> dict:
        return {"group_port": self.listener.getsockname()[1]} if self.listener else {}

    def connect(self, peers: dict[int, dict]) -> None:
        """Before T0: rank 0 accepts every other rank; the others dial rank 0."""
        try:
            if self.rank == 0 and self.listener is not None:
                deadline = time.monotonic() + self.timeout
                while len(self.socks) < self.workers - 1:
                    self.listener.settimeout(max(0.001, deadline - time.monotonic()))
                    conn, _ = self.listener.accept()
                    hello_s = timing("mpi.peer_hello")
                    conn.settimeout(max(0.001, min(hello_s, deadline - time.monotonic())))
                    try:
                        ours = hmac.compare_digest(_recv(conn, len(self.token)), self.token)
                    except OSError:
                        ours = False
                    if ours:
                        conn.settimeout(self.timeout)
                        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self.socks.append(conn)
                    else:
                        self.strangers += 1
                        conn.close()        # not one of ours
            elif self.rank > 0:
                zero = peers[0]
                s = socket.create_connection((zero["host"], zero["group_port"]),
                                             timeout=self.timeout)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(self.token)
                self.socks.append(s)
        except (OSError, KeyError) as e:
            raise KernelError(f"{self.label}: cannot join the phase's other slots (rank "
                              f"{self.rank} of {self.workers}): {e}") from None

    def max(self, value: int) -> int:
        """The largest value over the group (every rank calls it once)."""
        if self.workers == 1:
            return value
        if self.rank == 0:
            best = max([value] + [_INT.unpack(_recv(s, _INT.size))[0] for s in self.socks])
            for s in self.socks:
                s.sendall(_INT.pack(best))
            return best
        self.socks[0].sendall(_INT.pack(value))
        return _INT.unpack(_recv(self.socks[0], _INT.size))[0]

    def close(self) -> None:
        for s in self.socks + ([self.listener] if self.listener else []):
            s.close()
        self.socks, self.listener = [], None
