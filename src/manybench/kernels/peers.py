"""The slots of one phase as a group: rank 0 listens, every other rank connects to it before
T0, and inside the timed window they agree on a number (the largest of theirs), as IOR's
tasks do with MPI_Allreduce at a stonewall. Nodes reach each other by the hosts the engine
adds to every rank's published info.
"""
from __future__ import annotations

import socket
import struct

from .base import KernelError

HELLO = b"mbgroup1"
_INT = struct.Struct("!q")


def _recv(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("a peer closed the connection")
        data += chunk
    return data


class Group:
    def __init__(self, rank: int, workers: int, timeout: float, label: str) -> None:
        self.rank, self.workers, self.timeout, self.label = rank, workers, timeout, label
        self.listener: socket.socket | None = None
        self.socks: list[socket.socket] = []
        if rank == 0 and workers > 1:
            if socket.has_dualstack_ipv6():
                self.listener = socket.create_server(("", 0), family=socket.AF_INET6,
                                                     dualstack_ipv6=True)
            else:
                self.listener = socket.create_server(("", 0))

    def published(self) -> dict:
        return {"group_port": self.listener.getsockname()[1]} if self.listener else {}

    def connect(self, peers: dict[int, dict]) -> None:
        """Before T0: rank 0 accepts every other rank; the others dial rank 0."""
        try:
            if self.rank == 0 and self.listener is not None:
                self.listener.settimeout(self.timeout)
                while len(self.socks) < self.workers - 1:
                    conn, _ = self.listener.accept()
                    conn.settimeout(self.timeout)
                    if _recv(conn, len(HELLO)) == HELLO:
                        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self.socks.append(conn)
                    else:
                        conn.close()        # not one of ours
            elif self.rank > 0:
                zero = peers[0]
                s = socket.create_connection((zero["host"], zero["group_port"]),
                                             timeout=self.timeout)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(HELLO)
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
