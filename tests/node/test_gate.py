"""The door of a node's ports (node/gate.py, issue 28): a connection opens only by proving
the run's secret, within one deadline for all of its handshake, in frames of a few KiB;
slow, silent, oversized and many connections are dropped without delaying anyone; the clock
echo's stamps carry an HMAC a forger cannot make."""
from __future__ import annotations

import socket
import struct
import threading
import time
import tracemalloc

import pytest

from manybench.node import protocol as P
from manybench.node.clock import EchoServer, measure_offset
from manybench.node.direct import Listener, connect, open_channel, recv_frame, send_frame
from manybench.node.gate import PRE_AUTH_MAX, Door, Gate, Refused
from manybench.security import auth

SECRET = "the-runs-secret"


def _closed_within(sock: socket.socket, seconds: float, feed: bytes = b"") -> bool:
    """Whether the other end closes `sock` within `seconds`, while we send `feed` a byte at
    a time every 50 ms (a peer that keeps a handshake alive byte by byte)."""
    end = time.monotonic() + seconds
    sock.settimeout(0.05)
    i = 0
    while time.monotonic() < end:
        try:
            if feed:
                sock.send(feed[i % len(feed):i % len(feed) + 1])
                i += 1
            if sock.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:      # reset, broken pipe: closed
            return True
    return False


@pytest.fixture
def listener():
    gate = Gate(handshake_s=0.5)      # a short deadline: the test waits less
    lst = Listener(SECRET, host="127.0.0.1", gate=gate)
    yield lst
    lst.close()
    gate.close()


def test_the_handshake_has_one_deadline_that_no_byte_extends(listener):
    """A peer feeding a byte now and then (a frame's length announced, then its body one
    byte at a time) used to hold the agent for as long as it liked: each byte restarted a
    10 s timeout. Now its whole handshake has one deadline."""
    with socket.create_connection(("127.0.0.1", listener.port)) as s:
        feed = struct.pack("!I", 2000) + b"x" * 2000
        assert _closed_within(s, 30, feed)
    with socket.create_connection(("127.0.0.1", listener.port)) as s:
        assert _closed_within(s, 30)                        # silent: the same


def test_a_frame_announced_beyond_a_few_kib_is_refused_at_once_and_never_allocated(listener):
    """14 bytes used to make an agent allocate 1 GiB: the announced length was allocated
    before the secret was checked."""
    tracemalloc.start()
    try:
        with socket.create_connection(("127.0.0.1", listener.port)) as s:
            s.sendall(struct.pack("!I", (1 << 30) - 1) + b"\x00" * 10)
            assert _closed_within(s, 30)
        with socket.create_connection(("127.0.0.1", listener.port)) as s:
            s.sendall(struct.pack("!I", PRE_AUTH_MAX + 1))
            assert _closed_within(s, 30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak


def test_many_silent_connections_do_not_keep_the_run_out(listener):
    """More connections than the gate holds at once, all silent: the oldest are dropped
    first, so the run's own coordinator gets in, and is served while they wait."""
    socks = [socket.create_connection(("127.0.0.1", listener.port)) for _ in range(300)]
    try:
        ours = connect("127.0.0.1", listener.port, False, SECRET, None, "node n1")
        with ours:
            got = listener.accept(timeout=30)
            assert got is not None
            with got:
                send_frame(ours, P.encode(P.Ping()))
                assert isinstance(P.decode(recv_frame(got), "c"), P.Ping)
    finally:
        for s in socks:
            s.close()


def test_a_wrong_secret_is_refused_and_a_peer_that_does_not_prove_it_is_not_trusted(listener):
    with pytest.raises(Refused, match="wrong secret"):
        connect("127.0.0.1", listener.port, False, "a guess", None, "node n1")
    # the other way round: a port that is not the run's node (it cannot prove the secret)
    gate = Gate()
    impostor = socket.create_server(("127.0.0.1", 0))
    gate.open(Door(impostor, "direct", lambda: auth.derive("another run", "direct"),
                   lambda conn, session: None))
    try:
        with pytest.raises((Refused, ValueError)):
            open_channel("127.0.0.1", impostor.getsockname()[1], False,
                         auth.derive(SECRET, "direct"), "direct", None, "node n1")
    finally:
        gate.close()
        impostor.close()


def test_a_proof_for_one_channel_opens_no_other():
    """The echo's key and the direct channel's are both derived from the run's secret, for
    their own use: a proof made for one is worth nothing to the other."""
    gate = Gate()
    echo = EchoServer("127.0.0.1", lambda: auth.derive(SECRET, "echo"), gate)
    try:
        with pytest.raises((Refused, ValueError)):
            open_channel("127.0.0.1", echo.port, False, auth.derive(SECRET, "direct"), "direct",
                         None, "echo")
        off = measure_offset("127.0.0.1", echo.port, auth.derive(SECRET, "echo"), samples=5)
        assert abs(off.offset_ns) < 1e9 and off.samples == 5
    finally:
        echo.close()
        gate.close()


def test_an_echo_that_does_not_hold_the_secret_cannot_forge_a_clock():
    """A stamp altered on the way (or made by a port that is not the node's echo) fails its
    HMAC, checked once the exchanges are over: no offset is made of it."""
    key = auth.derive(SECRET, "echo")
    echo = EchoServer("127.0.0.1", lambda: key,
                      clock=lambda: time.time_ns() + 3_600_000_000_000)
    try:   # a man in the middle: pass the handshake through, then add an hour to each stamp
        proxy = socket.create_server(("127.0.0.1", 0))

        def relay() -> None:
            conn, _ = proxy.accept()
            with conn, socket.create_connection(("127.0.0.1", echo.port)) as up:
                for _ in range(2):                            # Challenge, then Welcome
                    conn.sendall(_frame(recv_frame(up)))
                    if _ == 0:
                        up.sendall(_frame(recv_frame(conn)))  # Hello
                while True:
                    req = conn.recv(8, socket.MSG_WAITALL)
                    if len(req) != 8:
                        return
                    up.sendall(req)
                    reply = bytearray(up.recv(24, socket.MSG_WAITALL))
                    reply[:8] = struct.pack("<q", struct.unpack("<q", reply[:8])[0] + 1)
                    conn.sendall(bytes(reply))
        t = threading.Thread(target=relay, daemon=True)
        t.start()
        with pytest.raises(ConnectionError, match="not made with the run's secret"):
            measure_offset("127.0.0.1", proxy.getsockname()[1], key, samples=3)
        proxy.close()
    finally:
        echo.close()


def _frame(data: bytes) -> bytes:
    return struct.pack("!I", len(data)) + data


def test_an_echo_serves_no_one_between_runs():
    echo = EchoServer("127.0.0.1", lambda: None)
    try:
        with pytest.raises(Refused, match="serves no run"):
            measure_offset("127.0.0.1", echo.port, auth.derive(SECRET, "echo"), samples=1)
    finally:
        echo.close()


CHILD = """
import json, os, resource, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from manybench.node.direct import Listener
lst = Listener(sys.argv[1], host="127.0.0.1")
print(lst.port, flush=True)
sys.stdin.readline()                     # the flood is in place
t = time.monotonic()
while time.monotonic() - t < 5:          # held at its descriptors' limit for 5 s
    time.sleep(0.1)
cpu = os.times()
print(json.dumps({"cpu_s": cpu.user + cpu.system}), flush=True)
conn = lst.accept(timeout=60)
print(json.dumps({"opened": conn is not None}), flush=True)
"""


def test_a_node_out_of_descriptors_neither_spins_nor_shuts_the_run_out():
    """Connections beyond the process's descriptors leave its port readable: accept() failing
    with EMFILE must free a stranger's slot (or wait), not spin a cpu, and the run's own
    connection still gets in."""
    import json
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-c", CHILD, SECRET], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    socks = []
    try:
        port = int(child.stdout.readline())
        for _ in range(200):
            socks.append(socket.create_connection(("127.0.0.1", port)))
        child.stdin.write("go\n")
        child.stdin.flush()
        cpu = json.loads(child.stdout.readline())["cpu_s"]
        ours = connect("127.0.0.1", port, False, SECRET, None, "node n1")
        assert json.loads(child.stdout.readline()) == {"opened": True}
        ours.close()
    finally:
        for s in socks:
            s.close()
        child.kill()
        child.wait()
    assert cpu < 1.0, cpu       # a spinning accept loop takes a cpu for the 5 s


def test_a_stranger_dropped_for_a_newer_one_in_the_same_batch_does_not_stop_the_gate():
    """At the pending limit, a new connection drops the oldest handshake. When that one's
    own event came in the same batch after the accept (a flood on a loaded machine), it was
    stepped after being dropped (KeyError): the gate's thread ended, and no connection,
    the run's own included, was ever opened again on any of its doors."""
    from held_select import WAIT_S, HeldSelect
    gate = Gate(pending_max=2)
    held = gate.sel.select = HeldSelect(gate.sel)
    listener = Listener(SECRET, host="127.0.0.1", gate=gate)
    strangers = []

    def stranger() -> socket.socket:
        s = socket.create_connection(("127.0.0.1", listener.port))
        recv_frame(s)            # its challenge: the gate holds it pending
        strangers.append(s)
        return s
    try:
        stranger()
        second = stranger()
        held.arm()
        stranger()               # the limit: the first is dropped; the next select is held
        assert held.waiting.wait(WAIT_S)
        late = socket.create_connection(("127.0.0.1", listener.port))   # drops the second
        strangers.append(late)
        second.sendall(b"\0")    # ... whose own event comes after the accept
        held.go.set()
        ours = connect("127.0.0.1", listener.port, False, SECRET, None, "node n1")
        with ours:
            assert listener.accept(timeout=WAIT_S) is not None
        # the case made: the accept, then the dropped one's event, in one batch
        kinds = [type(d).__name__ for d in held.batch]
        assert "_Pending" in kinds[kinds.index("Door"):], kinds
    finally:
        held.go.set()
        for s in strangers:
            s.close()
        listener.close()
        gate.close()
