"""The go to 1,000 nodes (issue 21, dispatch): each node's Run carries its 64 assignments, the
same list phase after phase of a placement, and packing them was most of the coordinator's
time to send the go (~40-60 us a node). They are packed once per node and joined into each
Run's envelope (protocol.encode_with), byte for byte what encode gives, and packed again
as soon as the list holds other assignments."""
from __future__ import annotations

import pytest

from manybench.engines import channels
from manybench.engines.base import wire_phase
from manybench.engines.simulated import SimulatedEngine
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P
from manybench.node.arrays import SlotResults
from manybench.node.simulated import SimSpec

T = 1_700_000_000_000_000_000


def _messages() -> list:
    spec = TaskSpec("t", "command", {}, command=["echo", "{size}"], metrics={"r": "(\\d+)"})
    phase = wire_phase(Phase(3, spec, "command", "v", 1, 2, "spread", "core", {"size": 4096},
                             "p", env={"A": "1"}))
    work = [P.Assignment(P.SlotPlace(s, s, (s,), s % 2 == 0, 40_000, (0,)), s) for s in range(3)]
    return [P.Run(T, work, phase), P.Run(T, work, None), P.Run(T, [], None),
            P.Prepare(phase, work), P.Forward({"a": b"x", "b": b""}),
            P.Finished(SlotResults(slot=[1], start_ns=[T], end_ns=[T + 1], armed_ns=[T - 1],
                                   elapsed_ns=[1], ops=[1], bytes=[0], status=["ok"]), [], []),
            P.Start("run", "n1", 2, "/tmp", True, 1.0, secret="s"), P.Ping(), P.Failed("x"),
            phase, work[0]]                        # shared values: packed apart as a whole


@pytest.mark.parametrize("msg", _messages(), ids=lambda m: type(m).__name__)
def test_a_message_with_fields_packed_apart_is_encode_byte_for_byte(msg):
    fields = list(msg.__dataclass_fields__)
    for k in range(len(fields) + 1):       # none, the first, the first two, ... packed apart
        apart = {f: P.pack_value(getattr(msg, f)) for f in fields[:k]}
        assert P.encode_with(msg, apart) == P.encode(msg)
        assert P.decode(P.encode_with(msg, apart), "test") == msg


def _work(node: int) -> list[P.Assignment]:
    return [P.Assignment(P.SlotPlace(s, s, (s,), True), node * 4 + s) for s in range(4)]


def test_a_nodes_assignments_are_packed_once_and_again_when_they_change(monkeypatch):
    engine = SimulatedEngine(SimSpec(2, 4))
    packed = []
    real = channels.pack_value
    monkeypatch.setattr(channels, "pack_value", lambda v: packed.append(v) or real(v))
    work = {"a": _work(0), "b": _work(1)}
    for t0 in (T, T + 1, T + 2):                 # three phases of one placement
        reqs = {n: P.Run(t0, w, None) for n, w in work.items()}
        got = engine._envelopes(reqs)
        assert got == {n: P.encode(r) for n, r in reqs.items()}
    assert len(packed) == 2                      # once per node
    work["a"][1] = P.Assignment(P.SlotPlace(1, 3, (3,), False), 9)   # the list changed
    reqs = {n: P.Run(T + 3, w, None) for n, w in work.items()}
    assert engine._envelopes(reqs) == {n: P.encode(r) for n, r in reqs.items()}
    assert len(packed) == 3
    # requests without assignments are left to the fanout's own encoding
    assert engine._envelopes({"a": P.Ping(), "b": P.Connect({})}) == {}
    engine.fanout.close()
