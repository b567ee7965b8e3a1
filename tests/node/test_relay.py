"""A relay (node/relay.py, issue 21) with real sockets in one process: members are direct-channel
listeners served by threads; the relay sends each its request's envelope unread, serves its own
request while they work, and gathers their replies; a member that dies mid-round is reported
lost while the others' replies come; a wrong secret opens no channel."""
from __future__ import annotations

import socket
import threading

from manybench.node import protocol as P
from manybench.node.clock import EchoServer
from manybench.node.direct import Listener, recv_frame, send_frame
from manybench.node.relay import Relay
from manybench.security import auth

SECRET = "relay-secret-0123"


class FakeMember:
    """A node's direct channel: each request answered by `answer(request) -> reply`; an
    answer of None closes the connection instead (the node died mid-round)."""

    def __init__(self, answer, secret: str = SECRET) -> None:
        self.listener = Listener(secret, host="127.0.0.1")
        self.echo = EchoServer("127.0.0.1", lambda: auth.derive(secret, "echo"))
        self.answer = answer
        self.got: list[object] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def member(self) -> P.Member:
        return P.Member("127.0.0.1", self.listener.port, False, self.echo.port)

    def _serve(self) -> None:
        while True:
            try:
                conn = self.listener.accept()
            except OSError:
                return
            if conn is None:
                continue
            with conn:
                try:
                    while True:
                        req = P.decode(recv_frame(conn), "relay")
                        self.got.append(req)
                        reply = self.answer(req)
                        if reply is None:
                            return
                        send_frame(conn, P.encode(reply))
                except (EOFError, OSError):
                    pass

    def close(self) -> None:
        self.listener.close()
        self.echo.close()


def _members(**answers) -> dict[str, FakeMember]:
    return {name: FakeMember(a) for name, a in answers.items()}


def test_a_round_is_forwarded_and_gathered_with_the_relays_own_request_served_meanwhile():
    sent = threading.Event()          # set once both members have their request
    seen: list[str] = []

    def member_answer(name):
        def answer(req):
            seen.append(name)
            if len(seen) == 2:
                sent.set()
            return P.SnapshotTaken({"node": name, "asked": req.dirs})
        return answer
    fakes = _members(n2=member_answer("n2"), n3=member_answer("n3"))
    relay = Relay({n: f.member() for n, f in fakes.items()}, SECRET, name="n1")
    try:
        assert relay.open() == {}

        def own(data: bytes) -> bytes:
            # the members had their frames before the relay's own work began
            assert sent.wait(10)
            req = P.decode(data, "coordinator")
            return P.encode(P.SnapshotTaken({"node": "n1", "asked": req.dirs}))
        frames = {n: P.encode(P.TakeSnapshot([n], [])) for n in ("n1", "n2", "n3")}
        out = relay.forward(frames, own)
        assert out.lost == {}
        got = {n: P.decode(b, n).data for n, b in out.replies.items()}
        assert got == {n: {"node": n, "asked": [n]} for n in ("n1", "n2", "n3")}
        # the envelopes crossed unread: the members got exactly what was sent
        assert [type(r) for r in fakes["n2"].got] == [P.TakeSnapshot]
        # a second round on the same channels
        out = relay.forward({"n3": P.encode(P.TakeSnapshot(["x"], []))})
        assert list(out.replies) == ["n3"] and out.lost == {}
    finally:
        relay.close()
        for f in fakes.values():
            f.close()


def test_a_member_that_dies_mid_round_is_lost_while_the_others_reply():
    fakes = _members(n2=lambda req: P.SnapshotTaken({"ok": 2}),
                     n3=lambda req: None,                       # dies on its request
                     n4=lambda req: P.SnapshotTaken({"ok": 4}))
    relay = Relay({n: f.member() for n, f in fakes.items()}, SECRET, name="n1")
    try:
        assert relay.open() == {}
        out = relay.forward({n: P.encode(P.TakeSnapshot([], [])) for n in fakes})
        assert set(out.replies) == {"n2", "n4"}
        assert set(out.lost) == {"n3"} and "closed" in out.lost["n3"]
        # lost for good: the next round does not wait for it
        out = relay.forward({n: P.encode(P.TakeSnapshot([], [])) for n in fakes})
        assert set(out.replies) == {"n2", "n4"} and set(out.lost) == {"n3"}
        # a request for a node that is not a member is answered lost, not sent anywhere
        out = relay.forward({"n9": P.encode(P.Ping())})
        assert out.replies == {} and "not a member" in out.lost["n9"]
    finally:
        relay.close()
        for f in fakes.values():
            f.close()


def test_a_wrong_secret_opens_no_channel():
    good = FakeMember(lambda req: None)
    other = FakeMember(lambda req: None, secret="another-run-secret")
    relay = Relay({"n2": good.member(), "n3": other.member()}, SECRET, name="n1")
    try:
        failed = relay.open()
        assert set(failed) == {"n3"} and "wrong secret" in failed["n3"]
        assert relay.members == ["n2"]
        out = relay.forward({"n3": P.encode(P.Ping())})
        assert "not a member" in out.lost["n3"] and other.got == []
    finally:
        relay.close()
        good.close()
        other.close()


def test_a_member_that_cannot_be_reached_is_reported_not_grouped():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                  # nobody listens there
    relay = Relay({"n2": P.Member("127.0.0.1", port, False, port)}, SECRET, name="n1")
    try:
        failed = relay.open()
        assert set(failed) == {"n2"} and "refused" in failed["n2"].lower(), failed
    finally:
        relay.close()


def test_the_relay_measures_each_members_clock():
    fakes = _members(n2=lambda req: None, n3=lambda req: None)
    relay = Relay({n: f.member() for n, f in fakes.items()}, SECRET, name="n1")
    try:
        assert relay.open() == {}
        echo = fakes["n3"].echo.sock           # its echo is gone: lost, the other measured
        echo.shutdown(socket.SHUT_RDWR)        # (wakes its accept: the port closes)
        echo.close()
        clocks = relay.clocks()
        assert set(clocks.offsets) == {"n2"} and set(clocks.lost) == {"n3"}
        offset, error = clocks.offsets["n2"]
        assert 0 < error and abs(offset) <= error      # one clock here: within the bound
    finally:
        relay.close()
        for f in fakes.values():
            f.close()


def _relay_node(fakes: dict[str, FakeMember]) -> tuple[FakeMember, Relay]:
    """Node n1's channel serving as its agent does: Forward through a Relay of `fakes`, its
    own request answered by itself."""
    relay = Relay({n: f.member() for n, f in fakes.items()}, SECRET, name="n1")

    def own(data: bytes) -> bytes:
        return P.encode(P.SnapshotTaken({"node": "n1"}))

    def answer(req):
        if isinstance(req, P.Forward):
            return relay.forward(req.frames, own)
        return P.Grouped(relay.open()) if isinstance(req, P.Group) else P.SnapshotTaken({})
    return FakeMember(answer), relay


def test_the_coordinator_reaches_members_through_their_relay_and_loses_them_by_name():
    from manybench.engines.direct import Fanout, NodeLost, connect
    fakes = _members(n2=lambda req: P.SnapshotTaken({"node": "n2"}),
                     n3=lambda req: None if req.dirs == ["die"] else P.SnapshotTaken({"node": "n3"}))
    n1, relay = _relay_node(fakes)
    fan = Fanout(relay=None)
    fan.add("n1", connect("127.0.0.1", P.DirectOffer(n1.listener.port, False), SECRET, None, "n1"))
    try:
        fan.send({"n1": P.Group({n: f.member() for n, f in fakes.items()})})
        assert fan.wait(10) and fan.replies["n1"] == P.Grouped({})
        fan.group("n1", ["n2", "n3"])
        fan.send({n: P.TakeSnapshot([], []) for n in ("n1", "n2", "n3")})
        assert fan.wait(10)
        assert {n: r.data["node"] for n, r in fan.replies.items()} == {n: n for n in fan.replies}
        assert set(fan.replies) == {"n1", "n2", "n3"}
        assert [type(r) for r in n1.got] == [P.Group, P.Forward]     # one frame for the group
        # a member that dies mid-round: lost by name, through its relay; the others answer
        fan.send({"n1": P.TakeSnapshot([], []), "n2": P.TakeSnapshot([], []),
                  "n3": P.TakeSnapshot(["die"], [])})
        assert fan.wait(10)
        lost = fan.replies["n3"]
        assert isinstance(lost, NodeLost) and "through relay n1" in str(lost), lost
        assert isinstance(fan.replies["n2"], P.SnapshotTaken)
        # the relay itself lost: its members are lost with it, said so
        n1.answer = lambda req: None
        fan.send({n: P.TakeSnapshot([], []) for n in ("n1", "n2")})
        assert fan.wait(10)
        assert isinstance(fan.replies["n1"], NodeLost)
        assert "its relay n1 was lost" in str(fan.replies["n2"])
        fan.send({"n2": P.TakeSnapshot([], [])})        # and in every later round
        assert fan.wait(10) and "its relay n1 was lost" in str(fan.replies["n2"])
    finally:
        fan.close()
        relay.close()
        for f in (n1, *fakes.values()):
            f.close()
