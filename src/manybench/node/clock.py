"""Clock offsets between nodes: Cristian's algorithm over a direct TCP echo.

Each node's agent runs an EchoServer; the coordinator measures each node's offset with
measure_offset (the fastest of many exchanges wins; its RTT/2 bounds the error). Dask's own
heartbeat estimate is one unfiltered sample and is not good enough.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass

ECHO_SAMPLES = 40


@dataclass(frozen=True)
class Offset:
    offset_ns: int   # node clock minus coordinator clock
    error_ns: int    # bound: half the round trip of the best exchange
    samples: int


class EchoServer:
    """Answers each 8-byte request with this node's CLOCK_REALTIME, stamped on arrival.

    Runs in a daemon thread of the node's worker process; one connection at a time is all a
    coordinator needs.
    """

    def __init__(self, host: str = "0.0.0.0", port: int = 0) -> None:
        self.sock = socket.create_server((host, port), reuse_port=False)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, name="manybench-echo", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    while len(conn.recv(8, socket.MSG_WAITALL)) == 8:
                        conn.sendall(struct.pack("<q", time.time_ns()))
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


def measure_offset(host: str, port: int, samples: int = ECHO_SAMPLES,
                   timeout: float = 5.0) -> Offset:
    """Cristian's algorithm: the exchange with the shortest round trip wins; its node stamp
    is compared with the midpoint of our send and receive, and its RTT/2 bounds the error."""
    best: tuple[int, int] | None = None   # (rtt, offset)
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(samples):
            t1 = time.time_ns()
            s.sendall(b"\0" * 8)
            data = s.recv(8, socket.MSG_WAITALL)
            t2 = time.time_ns()
            if len(data) != 8:
                raise ConnectionError("clock echo closed the connection")
            rtt = t2 - t1
            offset = struct.unpack("<q", data)[0] - (t1 + t2) // 2
            if best is None or rtt < best[0]:
                best = (rtt, offset)
    assert best is not None
    return Offset(best[1], (best[0] + 1) // 2, samples)
