"""Scheduled starts: T0 = now + a lead longer than the dispatch time measured so far.

The dispatch time of a phase is how long it took from sending "go" until the last slot
was waiting for T0 (its `armed` stamp). The lead is a multiple of the worst recent
dispatch, so a slow phase (many slots on few cores) lengthens the next lead at once and a
quiet run shortens it again slowly. A slot that armed after T0 was late: the next lead
doubles.
"""
from __future__ import annotations

import os
import select
import time
from collections import deque

MIN_LEAD_NS = 1_000_000        # below this, one slow wake-up of a loaded box makes a slot late
MAX_LEAD_NS = 2_000_000_000
SAFETY = 2.0                   # lead = SAFETY x worst recent dispatch + MARGIN
MARGIN_NS = 200_000
WINDOW = 8                     # phases of history


def now_ns() -> int:
    return time.time_ns()


def pause(seconds: float) -> None:
    """Sleep without clock_nanosleep: libfaketime (used to shift a test node's clock) makes
    Python's time.sleep fail with EINVAL, so node-side code waits with select instead."""
    select.select([], [], [], max(0.0, seconds))


def wait_child(pid: int, timeout: float) -> int | None:
    """Wait up to `timeout` s for our child `pid`; its wait status, or None if still running."""
    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= end:
            return None
        pause(0.005)


class Scheduler:
    """Chooses T0 for each phase from the dispatch times observed in earlier ones."""

    def __init__(self, min_lead_ns: int = MIN_LEAD_NS) -> None:
        self.min_lead_ns = min_lead_ns
        self.samples: deque[int] = deque(maxlen=WINDOW)
        self.late_boost = 1.0

    def lead_ns(self) -> int:
        worst = max(self.samples, default=5_000_000)   # before any sample: a safe 5 ms
        lead = int(SAFETY * worst * self.late_boost) + MARGIN_NS
        return max(self.min_lead_ns, min(MAX_LEAD_NS, lead))

    def next_t0(self, now: int | None = None) -> int:
        return (now_ns() if now is None else now) + self.lead_ns()

    def observe(self, sent_ns: int, t0_ns: int, armed_ns: list[int]) -> None:
        """Record one phase: when go was sent, its T0, and when each slot armed."""
        if not armed_ns:
            return
        last = max(armed_ns)
        self.samples.append(max(0, last - sent_ns))
        # a late slot doubles the next lead once; on-time phases bring it back quickly
        self.late_boost = 2.0 if last > t0_ns else max(1.0, self.late_boost * 0.5)


# -- clock offsets between nodes (Cristian's algorithm over a direct TCP echo) -------------
import socket
import struct
import threading
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
