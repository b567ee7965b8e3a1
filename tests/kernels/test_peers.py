"""The phase's group of slots (kernels/peers.py: io.write's wear_out stonewall): only the
run's own slots join it (issue 28: its hello was a constant, so another user could join and
feed the group's agreed number)."""
from __future__ import annotations

import socket
import threading

from manybench.kernels.peers import Group
from manybench.kernels.rank_keys import phase_token


def test_a_stranger_is_dropped_and_the_group_agrees_among_its_own():
    token = phase_token("the run's slot key", "io group", "r1", 3)
    zero, one = (Group(r, 2, 20.0, "test", token, "127.0.0.1") for r in (0, 1))
    peers = {0: {"host": "127.0.0.1", **zero.published()}}
    got: dict = {}
    t = threading.Thread(target=lambda: (zero.connect(peers), got.update(zero=zero.max(5))))
    t.start()
    try:
        for hello in (b"mbgroup1", phase_token("another key", "io group", "r1", 3)):
            with socket.create_connection(("127.0.0.1", peers[0]["group_port"])) as s:
                s.settimeout(30)
                s.sendall(hello)
                try:
                    assert s.recv(8) == b""      # dropped: it was not one of the run's
                except ConnectionResetError:     # dropped with bytes unread: the same
                    pass
        one.connect(peers)
        got["one"] = one.max(9)
        t.join(30)
    finally:
        t.join(30)
        zero.close()
        one.close()
    assert got == {"zero": 9, "one": 9} and zero.strangers == 2
