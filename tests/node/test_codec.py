"""What crosses to a node is msgpack of typed messages, never pickle (issue 21): every message
round-trips exactly, a phase's reply carries a node's results as parallel arrays, and a body
that is not ours (a pickle) is refused without running anything."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import msgpack
import pytest

from manybench.engines.base import wire_phase
from manybench.inventory.topology import Cpu
from manybench.kernels import Result
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P
from manybench.node.arrays import SlotResults
from manybench.node.codec import Codec
from manybench.results.contract import TelemetryRow

T = 1_700_000_000_000_000_000
V = P.PROTOCOL_VERSION


def _phase() -> Phase:
    spec = TaskSpec("t", "command", {}, command=["echo", "{size}"], metrics={"r": "(\\d+)"})
    return Phase(3, spec, "command", "v", 1, 2, "spread", "core", {"size": 4096, "l": (1, 2)},
                 "p", env={"A": "1"}, wrap=["env", "--"], vars={"image": "x"}, sample=0.1)


def _results() -> dict[int, Result]:
    return {3: Result(start_ns=T + 10, end_ns=T + 20, elapsed_ns=10, armed_ns=T - 5, ops=7,
                      bytes=4096, metrics={"lat_p50_us": 2.5}, hist={3: 7, 70: 1},
                      extra={"rank": 1}, samples=[(T + 12, 3.0), (T + 20, 7.0)],
                      sample_unit="ops"),
            1: Result(status="error", error="prepare: no space")}


def _messages() -> list:
    phase = wire_phase(_phase())
    place = P.SlotPlace(1, 3, (3,), False, 40_000, (0,))
    row = TelemetryRow("", "n1", T, 1.0, 3, 1.5, 2.5, 0.0, 1 << 30, 1 << 20, 0.0, 1e6, 3.0,
                       10.0, 20.0)
    return [P.Info(), P.Renew(10.0), P.MeasureNoise(0.4), P.NoiseFloor({"gaps": [1, 2]}),
            P.Start("run", "n1", 2, "/tmp", True, 1.0, secret="s3cret"),
            P.Started(123, P.DirectOffer(4567, True)), P.Started(5, None, "no certificates"),
            P.Challenge(b"n" * 16, "direct"), P.Hello(b"m" * 16, b"p" * 32), P.Welcome(b"w" * 32),
            P.Prepare(phase, [P.Assignment(place, 0)]),
            P.Prepared(SlotResults.of(_results()), {0: {"port": 1}}, ["slot 2 replaced"]),
            P.Connect({0: {"host": "h", "port": 1}}), P.Connected(SlotResults()),
            P.Run(T, [P.Assignment(place, 0)], phase), P.Run(T, [], None),
            P.Finished(SlotResults.of(_results()), [], [row]),
            P.RunCommands([["true"]], {"A": "1"}, 2.0, {"d": "/tmp"}, ["true"]),
            P.CommandsDone([P.CommandOutput(["true"], 0, "", "", T, T + 1)], {"a": 1}, {}),
            P.TakeSnapshot(["/tmp"], []), P.SnapshotTaken({"taken_ns": T}), P.Ping(),
            P.Close(), P.Abort(), P.Failed("x"), None,
            P.NodeInfo("n1", 2, (Cpu(0, 0, 0, 0),), 1234, "10.0.0.1", 99, "boot", {"a": 1})]


def _run_with_phase() -> P.Run:
    return next(m for m in _messages() if isinstance(m, P.Run) and m.phase is not None)


def test_every_message_round_trips_exactly_as_msgpack_without_pickle():
    for m in _messages():
        data = P.encode(m)
        assert P.version_of(data) == V
        body = memoryview(data)[P.HEADER_SIZE:]
        # plain msgpack reads every body: extensions only, no pickle opcode anywhere
        msgpack.unpackb(body, ext_hook=lambda code, d: code, strict_map_key=False)
        assert P.decode(data, "n1") == m, type(m).__name__
    run = P.decode(P.encode(_run_with_phase()), "n1")
    assert run.phase.params["l"] == (1, 2) and run.phase.wrap == ("env", "--")   # tuples stay


def test_a_phase_reply_carries_the_nodes_results_as_arrays():
    arr = SlotResults.of(_results())
    assert arr.slot == [1, 3] and arr.status == ["error", "ok"]
    assert (arr.start_ns, arr.end_ns, arr.armed_ns) == ([0, T + 10], [0, T + 20], [0, T - 5])
    assert (arr.ops, arr.bytes, arr.elapsed_ns) == ([0, 7], [0, 4096], [0, 10])
    # what is rare travels only where present
    assert arr.error == {0: "prepare: no space"} and arr.metrics == {1: {"lat_p50_us": 2.5}}
    assert arr.extra == {1: {"rank": 1}} and arr.hist == {1: {3: 7, 70: 1}}
    assert arr.samples == {1: [[T + 12, T + 20], [3.0, 7.0]]} and arr.sample_unit == {1: "ops"}
    assert arr.to_dict() == _results()            # read back slot by slot, exactly
    back = P.decode(P.encode(P.Finished(arr)), "n1").results
    assert back == arr and back[3] == _results()[3]


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch boom-was-unpickled",))


def test_a_body_that_is_not_ours_is_refused_and_nothing_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evil = P.MAGIC + V.to_bytes(2, "big") + pickle.dumps(_Boom())
    with pytest.raises(ValueError, match="not a manybench message"):
        P.decode(evil, "node n1")
    assert not (tmp_path / "boom-was-unpickled").exists()
    for thing in (_Boom(), {1, 2}, Phase):          # nothing but wire types is packed
        with pytest.raises(TypeError, match="cannot cross to a node"):
            P.encode(thing)


def test_the_phase_sent_to_every_node_is_packed_once():
    phase = wire_phase(_phase())
    place = P.SlotPlace(0, 0, (0,), True)
    first = P.encode(P.Run(T, [P.Assignment(place, 0)], phase))
    calls = []
    real = P.CODEC.pack
    P.CODEC.pack = lambda m: calls.append(type(m)) or real(m)
    try:
        again = P.encode(P.Run(T, [P.Assignment(place, 0)], phase))
    finally:
        P.CODEC.pack = real
    assert again == first
    # the fields of the Run, its assignment and slot place are packed; the phase is not
    assert len(calls) < 8, calls


def _slot_messages() -> list:
    phase = wire_phase(_phase())
    place = P.SlotPlace(1, 3, (3,), False, 40_000, (0,))
    from manybench.kernels.base import SlotContext
    ctx = SlotContext("run", "n1", 1, 0, 2, 3, "/s", "/sh", phase=3, spec=phase.task,
                      env={"A": "1"}, wrap=["env"], vars={"x": "y"})
    return [P.SlotGo(T, P.SlotPrepare(phase, ctx, place)), P.SlotGo(T),
            P.SlotDone(_results()[3]), P.SlotReady({"port": 1}, 7), P.SlotPong(5),
            P.SlotConnect({0: {"host": "h"}}), ((1, (2, 3)), [4, (5,)])]


@pytest.mark.skipif(not P.CODEC.native, reason="the C extension is not built")
def test_the_hooks_in_c_pack_and_unpack_as_the_python_ones():
    """kernels/native/wire.c is node/codec.py's hooks in C: the same bytes, the same objects,
    the same refusals, either way round."""
    types, shared = P.WIRE_TYPES, {P.WirePhase: 16, P.WireTask: 16, P.Assignment: 1 << 17}
    c, py = Codec(types, shared), Codec(types, shared, native=False)
    assert c.native and not py.native
    for m in _messages() + _slot_messages():
        for _ in range(2):             # shared objects packed, then reused from the caches
            data = py.pack(m)
            assert c.pack(m) == data, type(m).__name__
            assert c.unpack(data) == m == py.unpack(data), type(m).__name__
            assert type(c.unpack(data)) is type(m)
    run = c.unpack(c.pack(_run_with_phase()))
    assert run.phase.params["l"] == (1, 2) and run.phase.wrap == ("env", "--")
    # bytes that came before make no new object: the phase the agent passes on
    data = py.pack(_run_with_phase())
    assert c.unpack(data).phase is c.unpack(data).phase
    # ... and go on as they came (the agent's phase to its slots); the caches stay bounded
    for i in range(40):
        phase = P.WirePhase(index=i, kernel="null", task=P.WireTask(name="t"), params={},
                            workers=1, rep=0, variant="")
        data = Codec(types, shared, native=False).pack(P.Run(T, [], phase))
        assert c.pack(c.unpack(data)) == data == py.pack(py.unpack(data))
    for code in c.decoded:
        assert list(c.decoded[code]) == list(py.decoded[code])   # the same kept, the same order
        assert len(c.recent[code]) == len(py.recent[code]) <= shared[c.types[code - 1]]
    assert len(c.decoded[c.code[P.WirePhase]]) == 16
    for codec in (c, py):
        with pytest.raises(ValueError, match="unknown wire type 99"):
            codec.unpack(msgpack.packb([msgpack.ExtType(99, b""), 1]))
        with pytest.raises(ValueError, match="not a manybench message: TypeError"):
            codec.unpack(msgpack.packb([msgpack.ExtType(py.code[P.Ping], b""), 1, 2]))
        for thing in (_Boom(), {1, 2}, Phase, [P.Ping(), {3}]):
            with pytest.raises(TypeError, match="cannot cross to a node"):
                codec.pack(thing)
        assert codec.unpack(codec.pack(P.Renew(True))) == P.Renew(True)


@pytest.mark.parametrize("native", [True, False])
def test_shared_objects_nested_without_end_are_refused_not_a_crash(native):
    """A shared object's bytes are unpacked with the same hooks, so a frame of them nested
    1,000 deep (5 kB) recursed in C: msgpack's unpacker takes ~32 kB of stack a level, and the
    process died (SIGSEGV) in either codec. Run apart: before the bound, it killed the test's
    own process."""
    if native and not P.CODEC.native:
        pytest.skip("the C extension is not built")
    probe = textwrap.dedent(f"""
        import msgpack
        from manybench.node import protocol as P
        from manybench.node.codec import Codec
        c = Codec(P.WIRE_TYPES, {{P.WirePhase: 16, P.WireTask: 16}}, native={native})
        data = msgpack.packb([1])
        for _ in range(1000):
            data = msgpack.packb(msgpack.ExtType(c.code[P.WirePhase], data))
        try:
            c.unpack(data)
        except ValueError as e:
            print(e)
        """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "shared objects nested deeper than" in done.stdout, done.stdout
