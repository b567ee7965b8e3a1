"""A slot's end of the channel to its rank: the rank's libmbrank.so (native/mbrank.c, which
describes the line protocol) connects to the Unix socket this slot listens on in the
abstract namespace, "\\0<job name>.<rank in job>", so only a rank on this node (this
network namespace) reaches it.

The name is the job's secret (rank_keys.py) but any user of the node reads it in
/proc/net/unix once it is bound, so the slot checks every peer before it says a word:
  - its uid (SO_PEERCRED, from the kernel) is the slot's, else it is closed unread;
  - it belongs to the job: its hello holds the job's token (compared in constant time),
    or it descends from the job's launcher where this slot started it (the ranks the
    launcher forks here). A rank started on another node (by orted, a hydra proxy, over
    ssh) descends from nothing this slot knows: its token is its proof.
A refused peer is closed and the slot waits on for its real rank. Peers are heard side by
side, each with mpi.doorway_hello to say its first line, so a silent or slow one holds
nothing.

The slot learns the rank's pid from the socket (SO_PEERCRED, not from what the rank says),
watches it with a pidfd (it is the launcher's child, not ours: its exit is seen, its status
is the launcher's to tell) and reads its binding from /proc once it is held.

The rank's start comes back in a page, not in a line: a memfd this slot makes (sealed: the
rank can neither shrink it under the slot's reads nor grow it) and sends with the go line;
the rank stamps into it as the last thing before its program runs, no syscall after, and
the slot reads it once the rank is gone, killed or not. A line sent there woke this slot on
the rank's own cpu at the program's first instants (issue 31).
"""
from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Callable

from ..config import timing
from .base import KernelError
from .binding import proc_binding
from .doorway import Doorway, Peer, descends, same_user
from .rank_keys import JobKeys

REFUSED = b"refused: not a rank of this job (no job token, not its launcher's child)\n"
# the start page (native/mbrank.c): realtime ns, monotonic ns, cpu, written (1 once stamped)
START_PAGE = struct.Struct("=qqii")
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


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
    transport: list = field(default_factory=list)  # what carried its messages, as its MPI
                                                   # said at MPI_Finalize (mpi_transport.py)


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
    def __init__(self, name: str, keys: JobKeys) -> None:
        self.name = name
        self.keys = keys
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self.server.bind("\0" + name)
        except OSError as e:
            self.server.close()
            raise KernelError(f"cannot listen for the rank at @{name}: {e.strerror}") from None
        self.server.listen(16)
        self.door = Doorway(self.server, same_user)
        self.conn: socket.socket | None = None
        self.pidfd = -1
        self.page = -1          # the start page's memfd, made once the rank is held
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
            if not self._wait([sock], deadline, watch):
                continue
            try:
                chunk = sock.recv(65536)
            except OSError:          # reset: the rank died with our line unread
                chunk = b""
            if not chunk:
                self.eof = True
                if self.buf:
                    break
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")

    @staticmethod
    def _wait(socks: list, deadline: float | None, watch: Callable[[], str | None]) -> list:
        """Those of `socks` ready to read, once any is (KernelError, TimeoutError: as _line;
        an empty list after mpi.rank_poll when none is: a doorway's peers have their own times)."""
        why = watch()
        if why:
            raise KernelError(why)
        poll_s = timing("mpi.rank_poll")   # how often it looks at what else may have gone wrong
        left = poll_s if deadline is None else min(poll_s, deadline - time.monotonic())
        if left <= 0:
            raise TimeoutError
        return select.select(socks, [], [], left)[0]

    # -- before T0 ---------------------------------------------------------------------
    def wait_ready(self, place: str, deadline: float | None,
                   watch: Callable[[], str | None] = lambda: None,
                   launcher: Callable[[], int] = lambda: 0) -> None:
        """Accept the rank (a peer of this user that holds the job's token or descends from
        launcher(), the pid of the job's launcher where this slot started it), hand it its
        place ("CPUS MEMS CWD"), wait until it is held (in MPI_Init, or before main).
        KernelError says why not (TimeoutError at the deadline)."""
        while self.conn is None:
            for peer, line in self.door.heard(self._wait(self.door.socks(), deadline, watch)):
                if self.conn is not None:
                    self.door.refuse(peer)
                else:
                    self._first(peer, line, launcher)
        self.door.close()
        self.conn.sendall(f"place {place}\n".encode())
        line = self._line(self.conn, deadline, watch)
        if line is None:
            raise RankGone("ended before it was ready (in MPI_Init or before main)")
        parts = line.split()
        if parts[:1] != ["ready"] or len(parts) != 3:
            raise KernelError(f"the rank's synchronizer said {line!r}")
        self.st.init_enter_ns, self.st.init_return_ns = int(parts[1]), int(parts[2])
        self.st.ready_mono = time.monotonic_ns()
        self._held()

    def _held(self) -> None:
        """The rank is held: where it is bound, and its cpu time so far, read now rather than
        at T0 (its start page tells no slot at T0, and until T0 it only waits: blocked, then
        at most spin_ns spun); its start page made."""
        st = self.st
        st.binding = proc_binding(st.pid)
        st.ns = proc_namespaces(st.pid)
        st.cpu_start_s = proc_cpu_s(st.pid)
        self.page = os.memfd_create("manybench-start", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.page, START_PAGE.size)
        fcntl.fcntl(self.page, fcntl.F_ADD_SEALS, SEALS)

    def _first(self, peer: Peer, line: bytes, launcher: Callable[[], int]) -> None:
        """A peer's first line: the job's first slot saying it failed ("abort", signed with
        the job's key: KernelError), the rank's hello (taken), or a refusal."""
        if line.startswith(b"abort "):
            why = self.keys.abort_why(line)
            if why is None:
                self.door.refuse(peer)
                return
            peer.sock.close()
            raise KernelError(why)
        # hello PID MPI TOKEN HOST (PID as the rank sees itself: the kernel's is kept)
        parts = line.split(b" ", 4)
        if parts[0] != b"hello" or len(parts) < 4 or not (
                self.keys.token_ok(parts[3]) or descends(peer.pid, launcher())):
            self.door.refuse(peer, REFUSED)
            return
        peer.sock.setblocking(True)
        self.conn, self.buf, self.eof = peer.sock, peer.buf, False
        self.st.pid = peer.pid
        self.st.mpi = parts[2] == b"1"
        self.st.host = parts[4].decode(errors="replace") if len(parts) > 4 else ""
        try:
            self.pidfd = os.pidfd_open(peer.pid)
        except OSError:
            self.pidfd = -1

    # -- T0 and after -------------------------------------------------------------------
    def go(self, t0_ns: int, spin_ns: int) -> bool:
        """Release the rank at T0 (this node's clock); False when it is gone."""
        line = f"go {t0_ns} {spin_ns}\n".encode()
        try:   # the page rides with the line's first byte; the rest as sendall would
            sent = socket.send_fds(self.conn, [line], [self.page])
            if sent < len(line):    # (an empty send to a rank gone already fails: EPIPE)
                self.conn.sendall(line[sent:])
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
                self._read_page()
                return "timeout"
            ready = select.select(watched, [], [], left)[0]
            if conn in ready:
                try:
                    chunk = conn.recv(65536)
                except OSError:      # reset: the rank died with our line unread in its
                    chunk = b""      # socket (a signal); gone like any other end
                self.buf += chunk
                self.eof = not chunk
            elif ready:      # the process is gone; what it sent last is already readable
                conn.setblocking(False)
                try:
                    self.buf += conn.recv(65536)
                except OSError:
                    pass
                self.eof = True
        self._read_page()
        if self.st.finalized_ns:
            return "finalized"
        if self.st.unfinalized_ns:
            return "unfinalized"
        return "ended" if self.st.end_ns else "exited"

    def _read_page(self) -> None:
        """The start the rank stamped into its page, if it did (the rank is gone: nothing
        writes the page any more). Unstamped: it ended before T0."""
        if self.page < 0:
            return
        data = os.pread(self.page, START_PAGE.size, 0)
        if len(data) != START_PAGE.size:
            return
        rt, mono, cpu, written = START_PAGE.unpack(data)
        if written == 1 and rt > 0:
            self.st.start_ns, self.st.start_mono, self.st.start_cpu = rt, mono, cpu

    def _stamp(self, parts: list[str]) -> None:
        st = self.st
        try:
            if parts[0] == "end":
                st.end_ns, st.end_mono, st.end_cpu = map(int, parts[1:4])
                st.cpu_end_s = proc_cpu_s(st.pid)
            elif parts[0] == "transport":
                st.transport = parts[1:]
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
        self.door.close()
        for s in (self.conn, self.server):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
        for fd in (self.pidfd, self.page):
            if fd >= 0:
                os.close(fd)
        self.pidfd = self.page = -1


def tell_abort(keys: JobKeys, ranks: range, why: str) -> None:
    """Tell the job's other slots on this node that it will not start (they are waiting for
    their ranks): over their ranks' sockets, a line signed with the job's key."""
    for r in ranks:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            s.settimeout(1.0)
            s.connect("\0" + socket_name(keys.name, r))
            s.sendall(keys.abort_line(why))
        except OSError:
            pass
        finally:
            s.close()


def _listen_tcp(host: str) -> socket.socket:
    """A TCP socket listening on `host`, this node's address that the other nodes' slots
    reach, at a free port; on every interface only when this node does not hold that
    address (the engine reaches it through one it does not: NAT, a proxy). What it hears is
    signed either way."""
    if host:
        try:
            family, _, _, _, addr = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
            return socket.create_server(addr, family=family)
        except OSError:
            pass
    dual = socket.has_dualstack_ipv6()
    return socket.create_server(("", 0), family=socket.AF_INET6 if dual else socket.AF_INET,
                                dualstack_ipv6=dual)


class AbortChannel:
    """Where a slot of a job on another node than the job's first is told that the job will
    not start, so it stops waiting for its rank at once: a TCP port on this node's address
    (SlotContext.host) that it publishes to its peers (the job's first slot learns it with
    the peers' hosts). Only a line signed with the job's abort key counts; its peers are
    heard without waiting on any (told() is polled)."""

    def __init__(self, host: str, keys: JobKeys) -> None:
        self.keys = keys
        self.server = _listen_tcp(host)
        self.port = self.server.getsockname()[1]
        self.door = Doorway(self.server)

    def abort_reason(self) -> str | None:
        """Why the job will not start, when its first slot said so (never blocks)."""
        why = None
        for peer, line in self.door.heard(select.select(self.door.socks(), [], [], 0)[0]):
            got = self.keys.abort_why(line)
            if got is None:
                self.door.refuse(peer)
            else:
                peer.sock.close()
                why = why if why is not None else got
        return why

    def close(self) -> None:
        self.door.close()
        self.server.close()


def tell_abort_remote(keys: JobKeys, peers: list[dict], why: str) -> None:
    """The AbortChannel of each slot in `peers` (their published "abort_port" and "host")."""
    line = keys.abort_line(why)
    for p in peers:
        if not p.get("abort_port"):
            continue
        try:
            with socket.create_connection((p["host"], p["abort_port"]), timeout=2.0) as s:
                s.sendall(line)
        except OSError:
            pass
