"""The agent's direct channel (issue 21): a real agent process, started as a Dask worker starts
it, opens its own port at the run's Start and serves only a Hello with the run's secret and
this protocol version; then a phase is one frame each way."""
from __future__ import annotations

import os
import socket
import time
from multiprocessing.connection import Connection

import pytest

from manybench.engines.base import wire_phase
from manybench.engines.direct import DirectRefused, Fanout, connect
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P
from manybench.node.direct import recv_frame, send_frame
from manybench.node.gate import proof
from manybench.security import auth

pytestmark = pytest.mark.e2e
pytest.importorskip("manybench._native", reason="the C kernels are not built")

V = P.PROTOCOL_VERSION
SECRET = "0123456789abcdef"


@pytest.fixture
def agent(tmp_path):
    """An agent server process as a worker starts it, after the run's Start: (its pipe, its
    Started reply)."""
    from manybench.node.dask_plugin import _popen_agent
    proc, sock, heard = _popen_agent({"tls": None})
    pipe = Connection(os.dup(sock.fileno()))

    def call(req: object) -> object:
        pipe.send_bytes(P.encode(req))
        return P.decode(pipe.recv_bytes(), "agent")
    started = call(P.Start("run-d", "n1", 1, str(tmp_path), secret=SECRET))
    try:
        yield call, started, heard
    finally:
        call(P.Close())
        proc.wait(timeout=30)
        sock.close()


def _hello(port: int, make) -> tuple[object, bytes]:
    """Read the node's challenge, send make(challenge) as our first frame; the node's answer
    and what follows it (b"": closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        challenge = P.decode(recv_frame(s), "n1")
        assert isinstance(challenge, P.Challenge) and challenge.use == "direct"
        send_frame(s, make(challenge))
        answer = P.decode(recv_frame(s), "n1")
        return answer, (s.recv(1) if isinstance(answer, P.Failed) else b"open")


def _proved(secret: str, version: int = V):
    """A Hello proving `secret` (as the coordinator makes it), of `version`."""
    def make(ch: P.Challenge) -> bytes:
        mine = auth.nonce()
        return P.encode(P.Hello(mine, proof(auth.derive(secret, "direct"), b"hello", "direct",
                                            ch.nonce, mine), version))
    return make


def test_the_channel_refuses_a_wrong_secret_and_another_version(agent):
    call, started, heard = agent
    assert isinstance(started, P.Started) and started.direct is not None
    assert started.direct.tls is False and started.why == ""
    port = started.direct.port
    refused, after = _hello(port, _proved("not-the-secret"))
    assert isinstance(refused, P.Failed) and refused.error.startswith("wrong secret")
    assert after == b""                                        # and closed

    def other_version(ch: P.Challenge) -> bytes:
        return P.MAGIC + (V + 1).to_bytes(2, "big") + P.CODEC.pack(
            P.Hello(b"0" * 16, b"", V + 1))
    refused, after = _hello(port, other_version)
    assert isinstance(refused, P.Failed) and after == b""
    assert refused.error.startswith(f"the peer speaks manybench protocol version "
                                    f"{V + 1}; this side speaks version {V}")
    refused, _ = _hello(port, _proved(SECRET, V + 1))        # the Hello's own field
    assert isinstance(refused, P.Failed) and f"version {V + 1}" in refused.error
    refused, _ = _hello(port, lambda ch: P.encode(P.Ping()))     # no Hello first
    assert isinstance(refused, P.Failed) and "opens with Hello" in refused.error
    # the secret itself, sent in clear as before protocol 5, proves nothing
    refused, _ = _hello(port, lambda ch: P.encode(P.Hello(b"0" * 16, SECRET.encode())))
    assert isinstance(refused, P.Failed) and refused.error.startswith("wrong secret")
    with pytest.raises(DirectRefused, match="wrong secret"):
        connect("127.0.0.1", started.direct, "guess", None, "node n1")
    welcome, _ = _hello(port, _proved(SECRET))
    assert isinstance(welcome, P.Welcome)        # the run's own proof opens it
    assert auth.valid(auth.derive(SECRET, "direct"), welcome.proof, b"welcome", b"direct",
                      *[b""] * 0) is False       # a proof is bound to its nonces
    assert call(P.Ping()) is None              # none of it disturbed the node
    assert heard.last() == 0.0     # nothing refused, nor the worker's pipe, is heard


def test_a_request_on_the_channel_is_stamped_for_the_workers_lease(agent):
    """What the worker's lease reads when it runs out (node/lease.py): the agent heard the
    run's coordinator then, on its direct channel; and the round it answered is the one the
    coordinator's renewer skips the node for (engines/lease.py)."""
    call, started, heard = agent
    sock = connect("127.0.0.1", started.direct, SECRET, None, "node n1")
    fan = Fanout(relay=None)
    fan.add("n1", sock)
    try:
        for _ in range(2):
            before = time.monotonic()
            fan.send({"n1": P.Ping()})
            assert fan.wait(30)
            assert before <= heard.last() <= time.monotonic()
            assert fan.answered == (fan.sent_at, {"n1": None}) and fan.sent_at >= before
        fan.send({"n1": P.Ping()})
        stamped = heard.last()
        fan.abandon()                     # a round not waited for is not "answered"
        assert fan.answered[0] < fan.sent_at and stamped > 0
    finally:
        fan.close()


def test_a_phase_is_one_frame_each_way_on_the_channel(agent):
    call, started, _ = agent
    sock = connect("127.0.0.1", started.direct, SECRET, None, "node n1")
    fan = Fanout(relay=None)
    fan.add("n1", sock)
    spec = TaskSpec("sync", "null", {})
    work = [P.Assignment(P.SlotPlace(0, -1, tuple(sorted(os.sched_getaffinity(0))), False), 0)]
    try:
        for k in range(3):
            phase = wire_phase(Phase(k, spec, "null", "", k, 1, "spread", "core", {}, "p"))
            fan.send({"n1": P.Run(time.time_ns() + 2_000_000, work, phase)})
            assert fan.wait(30)
            done = fan.replies["n1"]
            assert isinstance(done, P.Finished) and done.results.status == ["ok"]
            assert done.results.start_ns[0] > 0 and done.results.slot == [0]
        # the run's requests between phases travel there too
        fan.send({"n1": P.TakeSnapshot([], [])})
        assert fan.wait(30) and isinstance(fan.replies["n1"], P.SnapshotTaken)
    finally:
        fan.close()
