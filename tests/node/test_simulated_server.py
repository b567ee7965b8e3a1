"""A simulated node process's server (node/simulated.py SimServer): one selector serves every
channel and echo of its nodes, so nothing it does for one node may wait on that node.

A relay takes over a member's channel (the member's listener opens the relay's connection)
while the coordinator closes its own channel to the member. On a loaded machine both are
ready before the server's select returns, in one batch, in either order:
- the relay's taken first: the old channel's event, after it, was read as the new channel's,
  a blocking read of the relay's channel, on which the relay sent nothing while it measured
  the members' echoes. The process stalled, every echo it serves with it, until the relay's
  measurement timed out (10 s: "its clock echo failed (measured by relay sim01): timed out",
  test_simulated_relays in the parallel pass, reproduced here beside a loaded machine);
- the close read first: the node ended (its channel closed), and the listener's event after
  it read the closed listener: the whole process failed (EBADF).
"""
from __future__ import annotations

import random
import select
import threading

import pytest

from held_select import WAIT_S, HeldSelect

from manybench.node.clock import measure_offset
from manybench.node.direct import connect, open_channel, recv_frame, send_frame
from manybench.node.gate import Gate
from manybench.node.protocol import Ping, decode, encode
from manybench.node.simulated import SimNode, SimServer, SimSpec
from manybench.security import auth


def _ping(sock) -> None:
    send_frame(sock, encode(Ping()))
    assert decode(recv_frame(sock), "test") is None


# which comes first: epoll re-queues a level-triggered socket it has just reported at the head
# of its ready list, so the coordinator's close comes first when the server's last event was
# the coordinator's channel, and the relay's (queued before the close) when it was not
@pytest.mark.parametrize("first", ["take", "close"])
def test_a_relay_taking_a_channel_the_coordinator_closes_in_the_same_batch_stalls_nothing(
        first):
    secret = auth.new_secret()
    gate = Gate()
    node = SimNode("sim1", SimSpec(1, 1), secret, random.Random(1), gate)
    echo = ("127.0.0.1", node.echo.getsockname()[1], auth.derive(secret, "echo"))
    server = SimServer([node], gate)
    held = server.sel.select = HeldSelect(server.sel)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    relay = waker = None
    try:
        coordinator = connect("127.0.0.1", node.listener.port, False, secret, None, "sim1")
        _ping(coordinator)               # the server has the coordinator's channel
        held.arm()
        if first == "close":
            _ping(coordinator)           # answered: the server's next select is held
        else:                            # an echo opened: the same, its last event not the channel
            waker, _ = open_channel(*echo[:2], False, echo[2], "echo", None, "sim1's echo")
        assert held.waiting.wait(WAIT_S)
        relay = connect("127.0.0.1", node.listener.port, False, secret, None, "sim1")
        # the gate has handed the relay's channel to the listener: ready to be taken
        assert select.select([node.listener], [], [], WAIT_S)[0]
        coordinator.close()              # as the coordinator does once its relay has it
        held.go.set()
        # the node's echo answers, and so does the relay's channel
        got = measure_offset(*echo, samples=1, timeout=WAIT_S)
        assert got.samples == 1
        _ping(relay)
        assert node.alive
        # both came in the held batch, in the order this case is about
        what = [data[0] for data in held.batch if data[0] in ("listen", "conn")]
        assert what == (["listen", "conn"] if first == "take" else ["conn", "listen"])
    finally:
        held.go.set()
        for sock in (relay, waker):
            if sock is not None:
                sock.close()             # the node's channel closes: its server ends
        thread.join(WAIT_S)
        gate.close()
    assert not thread.is_alive()
