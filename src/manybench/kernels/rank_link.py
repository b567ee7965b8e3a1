"""A slot's end of the channel to its rank: the rank's libmbrank.so (native/mbrank.c, which
describes the line protocol) connects to the Unix socket this slot listens on in the
abstract namespace, "\\0<job prefix>.<rank in job>", so only a rank on this node (this
network namespace) reaches it.

The slot learns the rank's pid from the socket (SO_PEERCRED, not from what the rank says),
watches it with a pidfd (it is the launcher's child, not ours: its exit is seen, its status
is the launcher's to tell) and reads its binding from /proc while it runs.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Callable

from .base import KernelError
from .binding import proc_binding

POLL_S = 0.1   # how often a wait looks at what else may have gone wrong (the launcher)


def socket_name(prefix: str, rank: int) -> str:
    return f"{prefix}.{rank}"


@dataclass
class Stamps:
    """What the rank said, in this node's clocks."""
    pid: int = 0
    mpi: bool = False          # the program is MPI-linked: held in MPI_Init
    host: str = ""
    init_enter_ns: int = 0     # PMPI_Init's entry and return (MPI programs)
    init_return_ns: int = 0
    ready_mono: int = 0        # the slot's monotonic clock when the rank was ready
    start_ns: int = 0
    start_mono: int = 0
    start_cpu: int = -1
    end_ns: int = 0
    end_mono: int = 0
    end_cpu: int = -1
    finalized_ns: int = 0
    unfinalized_ns: int = 0    # an MPI program's exit() without MPI_Finalize
    binding: dict = field(default_factory=dict)   # /proc/<pid>: cpus_allowed, mems_allowed
    ns: dict = field(default_factory=dict)        # /proc/<pid>/ns: user_ns, mnt_ns (its
                                                  # container, when it runs in one)
    cpu_start_s: float = -1.0  # the rank's cpu time (/proc/<pid>/stat) at start and at end
    cpu_end_s: float = -1.0


class RankGone(Exception):
    """The rank's connection ended before the step waited for (its process is gone)."""


def proc_cpu_s(pid: int) -> float:
    """User + system cpu seconds of a running process (all its threads); -1 when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return -1.0


def proc_namespaces(pid: int) -> dict[str, str]:
    """The user and mount namespaces a process runs in ("user:[4026531837]"): ranks in one
    container share them, ranks on the host have the host's."""
    out = {}
    for ns in ("user", "mnt"):
        try:
            out[f"{ns}_ns"] = os.readlink(f"/proc/{pid}/ns/{ns}")
        except OSError:
            pass
    return out


class RankLink:
    def __init__(self, name: str) -> None:
        self.name = name
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self.server.bind("\0" + name)
        except OSError as e:
            self.server.close()
            raise KernelError(f"cannot listen for the rank at @{name}: {e.strerror}") from None
        self.server.listen(16)
        self.conn: socket.socket | None = None
        self.pidfd = -1
        self.buf = b""
        self.eof = False
        self.st = Stamps()

    # -- reading lines with a deadline, watching something else meanwhile -----------------
    def _line(self, sock: socket.socket, deadline: float | None,
              watch: Callable[[], str | None]) -> str | None:
        """The next line from `sock`; None at EOF. KernelError when watch() says why to stop
        (the launcher died) or the deadline passes."""
        while b"\n" not in self.buf:
            if self.eof:
                return None
            self._wait([sock], deadline, watch)
            chunk = sock.recv(65536)
            if not chunk:
                self.eof = True
                if self.buf:
                    break
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")

    @staticmethod
    def _wait(socks: list, deadline: float | None, watch: Callable[[], str | None]) -> None:
        while True:
            why = watch()
            if why:
                raise KernelError(why)
            left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError
            if select.select(socks, [], [], left)[0]:
                return

    # -- before T0 ---------------------------------------------------------------------
    def wait_ready(self, place: str, deadline: float | None,
                   watch: Callable[[], str | None] = lambda: None) -> None:
        """Accept the rank, hand it its place ("CPUS MEMS CWD"), wait until it is held
        (in MPI_Init, or before main). KernelError says why not (TimeoutError at the
        deadline)."""
        while self.conn is None:
            self._wait([self.server], deadline, watch)
            conn, _ = self.server.accept()
            conn.setblocking(True)
            self.buf, self.eof = b"", False
            first = self._line(conn, deadline, watch)
            if first is None:
                conn.close()
                continue
            if first.startswith("abort "):   # the job's launching slot: it failed
                conn.close()
                raise KernelError(first[6:])
            if not first.startswith("hello "):
                conn.close()
                continue
            self._hello(conn, first)
        self.conn.sendall(f"place {place}\n".encode())
        line = self._line(self.conn, deadline, watch)
        if line is None:
            raise RankGone("ended before it was ready (in MPI_Init or before main)")
        parts = line.split()
        if parts[:1] != ["ready"] or len(parts) != 3:
            raise KernelError(f"the rank's synchronizer said {line!r}")
        self.st.init_enter_ns, self.st.init_return_ns = int(parts[1]), int(parts[2])
        self.st.ready_mono = time.monotonic_ns()

    def _hello(self, conn: socket.socket, line: str) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", creds)[0]
        parts = line.split(" ", 3)
        self.conn = conn
        self.st.pid = pid
        self.st.mpi = len(parts) > 2 and parts[2] == "1"
        self.st.host = parts[3] if len(parts) > 3 else ""
        try:
            self.pidfd = os.pidfd_open(pid)
        except OSError:
            self.pidfd = -1

    # -- T0 and after -------------------------------------------------------------------
    def go(self, t0_ns: int, spin_ns: int) -> bool:
        """Release the rank at T0 (this node's clock); False when it is gone."""
        try:
            self.conn.sendall(f"go {t0_ns} {spin_ns}\n".encode())
            return True
        except OSError:
            return False

    def wait_end(self, deadline: float | None) -> str:
        """Read the rank's stamps until it is gone: "finalized" (MPI_Finalize returned),
        "ended" (end stamped: MPI_Finalize entered, or a plain program's exit()),
        "unfinalized" (an MPI program's exit() without MPI_Finalize), "exited" (gone without
        an end stamp), or "timeout" (the deadline passed: the rank is killed). Gone is its process
        ended (pidfd) or its connection closed, whichever comes first: a child it forked
        may hold the connection open."""
        conn = self.conn
        watched = [conn] + ([self.pidfd] if self.pidfd >= 0 else [])
        while True:
            while b"\n" in self.buf:
                line, _, self.buf = self.buf.partition(b"\n")
                self._stamp(line.decode(errors="replace").split())
            if self.eof:
                break
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.kill()
                return "timeout"
            ready = select.select(watched, [], [], left)[0]
            if conn in ready:
                chunk = conn.recv(65536)
                self.buf += chunk
                self.eof = not chunk
            elif ready:      # the process is gone; what it sent last is already readable
                conn.setblocking(False)
                try:
                    self.buf += conn.recv(65536)
                except OSError:
                    pass
                self.eof = True
        if self.st.finalized_ns:
            return "finalized"
        if self.st.unfinalized_ns:
            return "unfinalized"
        return "ended" if self.st.end_ns else "exited"

    def _stamp(self, parts: list[str]) -> None:
        st = self.st
        try:
            if parts[0] == "start":
                st.start_ns, st.start_mono, st.start_cpu = map(int, parts[1:4])
                st.binding = proc_binding(st.pid)
                st.ns = proc_namespaces(st.pid)
                st.cpu_start_s = proc_cpu_s(st.pid)
            elif parts[0] == "end":
                st.end_ns, st.end_mono, st.end_cpu = map(int, parts[1:4])
                st.cpu_end_s = proc_cpu_s(st.pid)
            elif parts[0] == "finalized":
                st.finalized_ns = int(parts[1])
            elif parts[0] == "unfinalized":    # exit() without MPI_Finalize
                st.unfinalized_ns, st.end_mono, st.end_cpu = map(int, parts[1:4])
        except (IndexError, ValueError):
            pass

    def alive(self) -> bool:
        if self.pidfd < 0:
            return False
        return not select.select([self.pidfd], [], [], 0)[0]

    def kill(self) -> None:
        """SIGKILL the rank's process through its pidfd (never a reused pid)."""
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        for s in (self.conn, self.server):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


def _abort_line(why: str) -> bytes:
    return ("abort " + why.replace("\n", " ")).encode() + b"\n"


def tell_abort(prefix: str, ranks: range, why: str) -> None:
    """Tell the job's other slots on this node that it will not start (they are waiting for
    their ranks): over their ranks' sockets."""
    for r in ranks:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            s.settimeout(1.0)
            s.connect("\0" + socket_name(prefix, r))
            s.sendall(_abort_line(why))
        except OSError:
            pass
        finally:
            s.close()


class AbortChannel:
    """Where a slot of a job on another node than the job's first is told that the job will
    not start, so it stops waiting for its rank at once: a TCP port it publishes to its
    peers (the job's first slot learns it with the peers' hosts)."""

    def __init__(self) -> None:
        dual = socket.has_dualstack_ipv6()
        self.server = socket.create_server(("", 0), family=socket.AF_INET6 if dual
                                           else socket.AF_INET, dualstack_ipv6=dual)
        self.port = self.server.getsockname()[1]

    def told(self) -> str | None:
        """Why the job will not start, when its first slot said so (never blocks long)."""
        if not select.select([self.server], [], [], 0)[0]:
            return None
        conn, _ = self.server.accept()
        try:
            conn.settimeout(1.0)
            data = conn.recv(65536).decode(errors="replace")
        except OSError:
            return None
        finally:
            conn.close()
        return data[6:].strip() if data.startswith("abort ") else None

    def close(self) -> None:
        self.server.close()


def tell_abort_remote(peers: list[dict], why: str) -> None:
    """The AbortChannel of each slot in `peers` (their published "abort_port" and "host")."""
    for p in peers:
        if not p.get("abort_port"):
            continue
        try:
            with socket.create_connection((p["host"], p["abort_port"]), timeout=2.0) as s:
                s.sendall(_abort_line(why))
        except OSError:
            pass
