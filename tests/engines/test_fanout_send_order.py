"""The coordinator's round through relays (engines/direct.Fanout.send): each relay's Forward is
sent as soon as its group's requests are encoded, not after every node's, so the first relays
carry the go on while the coordinator still encodes the others' (1,000 nodes x 64 slots: ~50 ms
of encoding before the first relay got anything)."""
from __future__ import annotations

import socket

from manybench.engines import direct
from manybench.engines.direct import Fanout
from manybench.node import protocol as P


def test_a_relays_forward_is_sent_before_the_next_groups_requests_are_encoded(monkeypatch):
    fanout = Fanout(relay=None)
    ends = []
    for relay, members in (("r1", ["a", "b"]), ("r2", ["c", "d"])):
        here, there = socket.socketpair()
        ends.append(there)
        fanout.add(relay, here)
        fanout.group(relay, members)
    events: list[str] = []
    real_encode, real_send = direct.encode, direct.send_frame

    def encode(obj):
        events.append(f"encode {type(obj).__name__}")
        return real_encode(obj)

    def send_frame(sock, data):
        events.append("send")
        real_send(sock, data)
    monkeypatch.setattr(direct, "encode", encode)
    monkeypatch.setattr(direct, "send_frame", send_frame)
    fanout.send({n: P.Ping() for n in ("r1", "a", "b", "r2", "c", "d")})
    # r1's group (3 requests), its Forward sent; then r2's
    assert events == ["encode Ping"] * 3 + ["encode Forward", "send"] \
        + ["encode Ping"] * 3 + ["encode Forward", "send"], events
    # a member whose relay has no request of its own in the round still goes through it
    events.clear()
    fanout.send({"c": P.Ping(), "a": P.Ping()})
    assert events.count("send") == 2 and set(fanout.carried) == {"r1", "r2"}
    assert fanout.carried == {"r2": ["c"], "r1": ["a"]}
    fanout.close()
    for s in ends:
        s.close()
