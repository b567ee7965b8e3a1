"""A parallel task's rank link without MPI (kernels/rank_keys.py, doorway.py, rank_link.py):
the job's secrets, which peers a slot takes for its rank, the abort port's signed lines, and
peers that say nothing or say it slowly. The attacks with real MPI jobs and a second user
are tests/kernels/test_rank_socket.py."""
from __future__ import annotations

import os
import select
import socket
import subprocess
import threading
import time

import psutil
import pytest

from manybench import config
from manybench.kernels import doorway
from manybench.kernels.base import KernelError
from manybench.kernels.doorway import Doorway, descends
from manybench.kernels.rank_keys import JobKeys, run_key
from manybench.kernels.rank_link import (AbortChannel, RankLink, _listen_tcp, socket_name,
                                         tell_abort, tell_abort_remote)

KEY = run_key("the run's secret")


def keys(job: int = 0) -> JobKeys:
    return JobKeys.of(KEY, f"run-{os.getpid()}-{threading.get_ident()}", 3, job)


def test_each_job_has_its_own_secrets_and_none_is_the_runs_secret():
    a, b = JobKeys.of(KEY, "r1", 0, 0), JobKeys.of(KEY, "r1", 0, 1)
    values = {JobKeys.of(k, run, phase, job) for k in (KEY, run_key("other"))
              for run in ("r1", "r2") for phase in (0, 1) for job in (0, 1)}
    assert len({v.name for v in values}) == len({v.token for v in values}) == 16
    assert "r1" not in a.name and a.name.startswith("manybench.") and len(a.name) == 42
    assert run_key("s") == run_key("s") != run_key("t") and "s" not in run_key("s")
    assert run_key("") != run_key("")          # no secret: a random one, never a fixed key
    assert a.token_ok(a.token.encode()) and not a.token_ok(b.token.encode())
    assert not a.token_ok(b"-") and not a.token_ok(b"")
    line = a.abort_line("launcher said\nno")
    assert line.endswith(b" launcher said no\n") and line.count(b"\n") == 1
    assert a.abort_why(line[:-1]) == "launcher said no"
    assert b.abort_why(line[:-1]) is None                        # another job's key
    assert a.abort_why(b"abort launcher said no") is None        # no MAC
    assert a.abort_why(line[:-1].replace(b"said", b"sad")) is None   # changed on the way
    with pytest.raises(ValueError, match="job_key"):
        JobKeys.of("", "r1", 0, 0)


class Rank(threading.Thread):
    """A rank of this process: connects to the link, says `hello`, answers its place with
    ready; what it heard is kept."""

    def __init__(self, name: str, hello: bytes) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect("\0" + name)
        self.hello, self.heard = hello, b""
        self.said = threading.Event()      # its hello is sent

    def run(self) -> None:
        self.sock.sendall(self.hello)
        self.said.set()
        self.sock.settimeout(60)
        while b"\n" not in self.heard:
            chunk = self.sock.recv(4096)
            if not chunk:
                return
            self.heard += chunk
        if self.heard.startswith(b"place "):
            self.sock.sendall(b"ready 1 2\n")


def _link(k: JobKeys) -> RankLink:
    return RankLink(socket_name(k.name, 0), k)


def _hello(k: JobKeys | None, host: str) -> bytes:
    return f"hello 1 1 {k.token if k else '-'} {host}\n".encode()


def test_the_slot_takes_the_peer_with_the_jobs_token_whatever_came_first():
    k = keys()
    link = _link(k)
    try:
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.connect("\0" + link.name)             # says nothing: holds nothing
        wrong = Rank(link.name, b"hello 1 1 " + b"0" * 64 + b" wrong\n")
        other = Rank(link.name, _hello(JobKeys.of(KEY, "another run", 3, 0), "other"))
        bare = Rank(link.name, _hello(None, "bare"))       # no token, not the launcher's
        real = Rank(link.name, _hello(k, "real"))
        # the strangers speak first (a thread's hello can lag its connect on a busy machine)
        for r in (wrong, other, bare):
            r.start()
            assert r.said.wait(60)
        real.start()
        link.wait_ready("0 - /tmp", None)
        for r in (wrong, other, bare, real):
            r.join(60)
        assert real.heard == b"place 0 - /tmp\n"
        for r in (wrong, other, bare):
            assert r.heard.startswith(b"refused: not a rank of this job"), r.heard
        assert link.st.host == "real" and link.st.mpi
        assert link.st.pid == os.getpid()            # from the kernel, not from the hello
        assert (link.st.init_enter_ns, link.st.init_return_ns) == (1, 2)
        assert link.door.refused == 3 and link.door.peers == []   # the silent one closed too
        silent.settimeout(60)
        assert silent.recv(10) == b""
    finally:
        link.close()


def test_a_peer_without_the_token_is_taken_when_it_descends_from_the_launcher():
    """The slot that started the job's launcher knows its ranks here by their ancestry."""
    k = keys()
    link = _link(k)
    try:
        rank = Rank(link.name, _hello(None, "child"))
        rank.start()
        link.wait_ready("0 - /tmp", None, launcher=os.getppid)   # this process descends
        rank.join(60)
        assert rank.heard.startswith(b"place ") and link.st.host == "child"
    finally:
        link.close()


def test_an_abort_counts_only_signed_with_the_jobs_key():
    k = keys()
    link = _link(k)
    try:
        for line in (keys(job=1).abort_line("another job's abort"), b"abort unsigned\n"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect("\0" + link.name)
                s.sendall(line)
        tell_abort(k, range(0, 1), "the launcher exited")
        with pytest.raises(KernelError, match="^the launcher exited$"):
            link.wait_ready("0 - /tmp", None)
        assert link.door.refused == 2
    finally:
        link.close()


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(10, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False


def _told(ch: AbortChannel, until=lambda: False) -> str | None:
    """Poll the channel as a waiting slot does until it tells why, or until()."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        select.select(ch.door.socks(), [], [], 0.1)
        why = ch.abort_reason()
        if why is not None or until():
            return why
    pytest.fail("the abort channel neither told nor closed its peer within 60 s")


def test_the_abort_port_listens_on_the_nodes_address_and_hears_slow_peers_whole():
    k = keys()
    ch = AbortChannel("127.0.0.1", k)
    try:
        assert ch.server.getsockname()[0] == "127.0.0.1"
        silent = socket.create_connection(("127.0.0.1", ch.port))
        slow = socket.create_connection(("127.0.0.1", ch.port))
        line = k.abort_line("job 0 did not start")
        slow.sendall(line[:20])
        unsigned = socket.create_connection(("127.0.0.1", ch.port))
        unsigned.sendall(b"abort x\n")
        assert _told(ch, lambda: _closed(unsigned)) is None    # closed, unheeded
        assert _told(ch, lambda: len(ch.door.peers) == 2) is None   # silent, half said
        slow.sendall(line[20:])                  # the rest, after the slot looked at it
        assert _told(ch) == "job 0 did not start"
        assert [p.sock.getpeername() for p in ch.door.peers] == [silent.getsockname()]
        silent.close()
    finally:
        ch.close()


def test_tell_abort_remote_reaches_an_abort_port():
    k = keys()
    ch = AbortChannel("127.0.0.1", k)
    try:
        tell_abort_remote(k, [{"host": "127.0.0.1", "abort_port": ch.port}, {"host": "x"}],
                          "job 2 did not start")
        assert _told(ch) == "job 2 did not start"
    finally:
        ch.close()


def test_an_address_this_node_does_not_hold_listens_everywhere_signed():
    held = {a.address for addrs in psutil.net_if_addrs().values() for a in addrs}
    # documentation addresses (RFC 5737): one no interface of this machine holds
    foreign = next(a for a in ("203.0.113.7", "198.51.100.7", "192.0.2.77") if a not in held)
    s = _listen_tcp(foreign)
    try:
        assert s.getsockname()[0] in ("::", "0.0.0.0")
    finally:
        s.close()


def test_a_peer_past_its_time_or_its_line_length_is_dropped(monkeypatch):
    server = socket.create_server(("127.0.0.1", 0))
    door = Doorway(server)
    now = [1000.0]
    monkeypatch.setattr(doorway.time, "monotonic", lambda: now[0])
    try:
        quiet = socket.create_connection(server.getsockname())
        long = socket.create_connection(server.getsockname())
        long.sendall(b"x" * doorway.LINE_MAX)
        door.heard([server])
        assert len(door.peers) == 2
        while len(door.peers) == 2:               # the long one, once read whole
            door.heard([door.peers[1].sock])
        assert door.peers[0].sock.getpeername() == quiet.getsockname()
        now[0] += config.timing("mpi.doorway_hello")                  # the quiet one's time is up
        door.heard([])
        assert door.peers == [] and door.refused == 2
        for s in (quiet, long):
            s.settimeout(60)
            assert s.recv(10 * doorway.LINE_MAX) == b"" or s.recv(10) == b""
    finally:
        door.close()
        server.close()


def test_descends_follows_parents_up():
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert descends(child.pid, os.getpid())
        assert not descends(os.getpid(), child.pid)
        assert not descends(child.pid, 1) and not descends(child.pid, 0)
    finally:
        child.kill()
        child.wait()
