"""What crosses to nodes (issue 16, item 3): a frozen wire phase of plain data built in one
place, every message in one versioned envelope, a node of another version refused by name on
both engines; the decision "prepare travels with the go" made once for both engines (item
1); cleanup failures carried back as stored warnings (item 7)."""
from __future__ import annotations

import asyncio
import dataclasses
import pickle
import sqlite3
import threading

import pytest

from manybench.security import auth

from manybench.engines.base import EngineError, wire_phase, with_go
from manybench.engines.dask import DaskEngine
from manybench.engines.local import LocalEngine
from manybench.inventory.topology import Cpu
from manybench.kernels import KERNELS, Result
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P
from manybench.node.agent import Agent
from manybench.node.server import AgentServer

V = P.PROTOCOL_VERSION
T = 1_700_000_000_000_000_000
PLAIN = (str, int, float, bool, type(None))


def _phase(kernel: str = "null", wrap: list[str] | None = None, **task) -> Phase:
    spec = TaskSpec("t", kernel, {}, **task)
    return Phase(3, spec, kernel, "v", 1, 2, "spread", "core", {"size": 4096}, "p",
                 env={"A": "1"}, wrap=wrap, vars={"image": "x"}, sample=0.1)


def _plain(value: object, path: str = "phase") -> list[str]:
    """Where a value holds anything but plain data and the protocol's own frozen types."""
    if isinstance(value, PLAIN):
        return []
    if isinstance(value, (tuple, list)):
        return [x for i, v in enumerate(value) for x in _plain(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _plain(k, path) + _plain(v, f"{path}.{k}")]
    if dataclasses.is_dataclass(value) and type(value) in P.WIRE_TYPES:
        if not type(value).__dataclass_params__.frozen:
            return [f"{path}: {type(value).__name__} is not frozen"]
        return [x for f in dataclasses.fields(value)
                for x in _plain(getattr(value, f.name), f"{path}.{f.name}")]
    return [f"{path}: {type(value).__module__}.{type(value).__name__}"]


def test_a_phase_crosses_as_frozen_plain_data_with_what_nodes_read():
    cmd = _phase("command", wrap=["env", "--"], command=["echo", "{size}"], shell=True,
                 timeout=5.0, metrics={"rate": "(?P<value>\\d+)"}, parse="fio",
                 env={"B": "2"}, launcher="mpirun", launcher_args=["-x"],
                 startup_timeout=7.0)
    group = _phase("group")
    group.members = [_phase(), cmd]
    for model in (cmd, group):
        wire = wire_phase(model)
        assert _plain(wire) == []                         # no model object inside
        with pytest.raises(dataclasses.FrozenInstanceError):
            wire.index = 9
        assert P.decode(P.encode(wire), "x") == wire
    wire = wire_phase(cmd)
    t = wire.task
    assert (t.command, t.shell, t.timeout, t.metrics, t.parse, t.env, t.launcher,
            t.launcher_args, t.startup_timeout) == (
        ("echo", "{size}"), True, 5.0, {"rate": "(?P<value>\\d+)"}, "fio", {"B": "2"}, "mpirun",
        ("-x",), 7.0)
    assert (wire.index, wire.kernel, wire.params, wire.workers, wire.rep, wire.variant,
            wire.env, wire.vars, wire.wrap, wire.sample) == (
        3, "command", {"size": 4096}, 2, 1, "v", {"A": "1"}, {"image": "x"}, ("env", "--"), 0.1)
    cmd.params["size"] = 1          # the model changing later changes nothing sent
    assert wire.params == {"size": 4096}
    member, rank = wire_phase(group).member_of(3)
    assert (member.kernel, rank) == ("command", 1)


def test_every_message_crosses_in_the_envelope_and_matches_by_type():
    phase = wire_phase(_phase())
    place = P.SlotPlace(1, 3, (3,), False, 40_000)
    msgs = [P.Info(), P.Renew(10.0), P.MeasureNoise(0.4), P.NoiseFloor({"gaps": 1}),
            P.Start("run", "n1", 2, "/tmp", True), P.Prepare(phase, [P.Assignment(place, 0)]),
            P.Prepared({1: Result(status="error")}, {0: {"port": 1}}), P.Connect({0: {}}),
            P.Connected({}), P.Run(T, [P.Assignment(place, 0)], None), P.Finished({}),
            P.Ping(), P.Close(), P.Abort(), P.Failed("x"), P.SlotGo(T), P.SlotReady(None),
            P.SlotDone(Result()), P.SlotPong(7), P.SlotExit(),
            P.NodeInfo("n1", 2, (Cpu(0, 0, 0, 0),), 1234, "10.0.0.1", 99, "boot", {"a": 1})]
    for m in msgs:
        data = P.encode(m)
        assert P.version_of(data) == V and P.decode(data, "n1") == m
    match P.decode(P.encode(P.Run(T, [], phase)), "n1"):
        case P.Run(t0_ns, work, ph):
            assert (t0_ns, work, ph.kernel) == (T, [], "null")
        case _:
            raise AssertionError("Run did not match its own pattern")


def test_a_message_of_another_version_is_refused_unread_naming_both_versions():
    body = b"\x80\x05not a pickle at all"          # never unpickled
    other = P.MAGIC + (V + 1).to_bytes(2, "big") + body
    with pytest.raises(P.ProtocolMismatch) as e:
        P.decode(other, "node n7")
    assert f"node n7 speaks manybench protocol version {V + 1}" in str(e.value)
    assert f"this side speaks version {V}" in str(e.value)
    with pytest.raises(P.ProtocolMismatch, match="no manybench protocol version"):
        P.decode(pickle.dumps(P.Info()), "node n7")   # a manybench older than the envelope


def test_a_start_of_another_version_is_refused_by_the_agent_on_both_engines(tmp_path,
                                                                            monkeypatch):
    start = P.Start("run", "n1", 1, str(tmp_path), protocol=V + 1)
    with pytest.raises(P.ProtocolMismatch, match=f"version {V + 1}.*version {V}"):
        Agent.of(start)
    failed = AgentServer(conn=None).reply(start)          # the Dask node's agent server
    assert isinstance(failed, P.Failed)
    assert f"the coordinator speaks manybench protocol version {V + 1}" in failed.error
    # the local engine's agent, as if it were another manybench: refused before any slot
    monkeypatch.setattr(P, "PROTOCOL_VERSION", V + 1)
    engine = LocalEngine()
    with pytest.raises(EngineError, match=f"version {V}; this side speaks version {V + 1}"):
        engine.start("run", 1, str(tmp_path), False)
    assert engine.agent is None


def test_prepare_travels_with_the_go_only_for_a_light_phase_without_a_wrap():
    assert with_go(_phase("null"))
    assert not with_go(_phase("null", wrap=["env", "--"]))   # the wrap starts before T0
    assert not with_go(_phase("io.write"))


# ---- a Dask client standing in for a cluster: each node answers mb_call ----------------------

class _Loop:
    def __init__(self) -> None:
        self.asyncio_loop = asyncio.new_event_loop()
        threading.Thread(target=self.asyncio_loop.run_forever, daemon=True).start()


class _Client:
    """Workers at addresses; answer(addr, request) -> encoded reply (or raises)."""

    def __init__(self, answer) -> None:
        self.loop, self.answer, self.sent = _Loop(), answer, []

    def scheduler_info(self, n_workers: int = 0) -> dict:
        return {"workers": {"tcp://a:1": {}, "tcp://b:1": {}}}

    def nthreads(self) -> dict:
        return {a: 1 for a in self.scheduler_info()["workers"]}

    def rpc(self, addr: str):
        client = self

        class Rpc:
            async def mb_call(self, kind: str, request: bytes, tag: bytes) -> bytes:
                req = P.decode(request, "the coordinator")
                assert isinstance(tag, bytes) and len(tag) == 32   # signed with the run's key
                assert type(req).__name__ == kind
                client.sent.append((addr, req))
                return client.answer(addr, req)
        return Rpc()


def test_a_dask_node_of_another_version_is_refused_by_name_before_anything_else():
    def answer(addr: str, req: object) -> bytes:
        data = P.encode(P.NodeInfo("n", 1, (), 1, "h", 1, "boot"))
        if addr == "tcp://b:1":      # another manybench: its envelope says so
            data = P.MAGIC + (V + 3).to_bytes(2, "big") + data[len(P.MAGIC) + 2:]
        return data
    client = _Client(answer)
    with pytest.raises(EngineError) as e:
        DaskEngine(client).start("run", None, "/tmp", False)
    assert str(e.value).startswith("Dask worker tcp://b:1 speaks manybench protocol version "
                                   f"{V + 3}; this side speaks version {V}")
    assert {type(r) for _, r in client.sent} == {P.Info}     # nothing else was asked


def _two_node_engine(answer) -> tuple[DaskEngine, _Client]:
    from manybench.engines.base import Node
    client = _Client(answer)
    engine = DaskEngine(client)
    engine.nodes = [Node("a", 1, ()), Node("b", 1, ())]
    engine.addr = {"a": "tcp://a:1", "b": "tcp://b:1"}
    return engine, client


def test_a_wrapped_light_phase_gets_its_prepare_round_on_both_engines():
    place = P.SlotPlace(0, -1, (0,), False)
    work = {"a": [P.Assignment(place, 0)], "b": [P.Assignment(place, 1)]}

    def answer(addr: str, req: object) -> bytes:
        return P.encode(P.Prepared({}, {}) if isinstance(req, P.Prepare) else P.Finished({}))
    for wrap, rounds in ((None, [P.Run]), (["env", "--"], [P.Prepare, P.Run])):
        engine, client = _two_node_engine(answer)
        engine.prepare(_phase("null", wrap=wrap), work, lambda: None)
        engine.go(T)
        while not engine.poll(1.0):
            pass
        assert [type(r) for a, r in client.sent if a == "tcp://a:1"] == rounds
        run = next(r for _, r in client.sent if isinstance(r, P.Run))
        assert (run.phase is None) == (wrap is not None)

    class Agent_:
        def __init__(self) -> None:
            self.calls = []

        def prepare(self, req, tick):
            self.calls.append(("prepare", req.phase.wrap))
            return P.Prepared({}, {})

        def go(self, t0, light):
            self.calls.append(("go", light is not None))

    for wrap, calls in ((None, [("go", True)]),
                        (["env", "--"], [("prepare", ("env", "--")), ("go", False)])):
        local = LocalEngine()
        local.agent, local.nodes = Agent_(), _two_node_engine(answer)[0].nodes[:1]
        local.prepare(_phase("null", wrap=wrap), {"a": work["a"]}, lambda: None)
        local.go(T)
        assert local.agent.calls == calls


def test_a_dask_worker_the_scheduler_dropped_is_a_lost_node():
    engine, client = _two_node_engine(lambda addr, req: P.encode(None))
    engine.work = {"a": [], "b": []}
    engine._check_workers()
    assert engine.lost_nodes() == {}
    client.scheduler_info = lambda n_workers=0: {"workers": {"tcp://a:1": {}}}   # b is gone
    engine._check_workers()
    assert engine.lost_nodes() == {"b": "node b lost: its Dask worker left the cluster"}


def test_a_dask_node_that_does_not_confirm_the_runs_end_is_a_warning():
    def answer(addr: str, req: object) -> bytes:
        if addr == "tcp://b:1":
            raise OSError("connection reset")
        return P.encode(None)
    engine, _ = _two_node_engine(answer)
    engine.close()
    told = engine.take_warnings()
    assert len(told) == 1
    kind, node, text = told[0]
    assert (kind, node) == ("cleanup", "b")
    assert text.startswith("node b did not confirm the run's end (Close: node b lost: OSError: "
                           "connection reset)")
    assert engine.take_warnings() == []


def test_a_kernel_whose_cleanup_raises_leaves_a_stored_warning_naming_it(tmp_path,
                                                                        monkeypatch):
    from manybench.plan import parse_plan
    from manybench.plan.expand import expand
    from manybench.run.coordinator import Coordinator

    def leaky_cleanup(state: object) -> None:
        raise OSError(5, "Input/output error")
    monkeypatch.setitem(KERNELS, "test.leaky", dataclasses.replace(
        KERNELS["null"], name="test.leaky", cleanup=leaky_cleanup))
    plan = parse_plan('repeat = 2\n[placement]\nworkers = 2\n[[task]]\nname = "leak"\n'
                      'kernel = "test.leaky"\n', "p.toml", ())
    out = Coordinator(plan, expand(plan), str(tmp_path), LocalEngine(), [],
                      progress=False).run()
    assert out.status == "finished"          # the measurements stand
    db = sqlite3.connect(tmp_path / "results.db")
    got = db.execute("SELECT kind, task, message FROM warnings WHERE kind = 'cleanup'").fetchall()
    assert len(got) == 1 and got[0][:2] == ("cleanup", "leak")
    assert got[0][2].startswith("kernel test.leaky: its cleanup after the phase failed "
                                "(OSError(5, 'Input/output error'))")


def test_a_dask_worker_answers_typed_requests_through_its_one_handler(monkeypatch):
    pytest.importorskip("distributed")
    from manybench.node import dask_plugin
    monkeypatch.setattr(dask_plugin, "_popen_agent", lambda *a: None)   # no agent process

    class Worker:
        ip, name = "127.0.0.1", "n1"

        def __init__(self) -> None:
            self.handlers: dict = {}
    worker, plugin = Worker(), dask_plugin.AgentPlugin(slots=1, node="n1")
    plugin.setup(worker)
    call = worker.handlers["mb_call"]

    key = auth.derive("the-runs-secret", "call")

    def ask(req: object, signed: bool = True) -> object:
        kind, data = type(req).__name__, P.encode(req)
        tag = auth.tag(key, kind.encode(), data) if signed else b""
        return P.decode(asyncio.run(call(kind=kind, request=data, tag=tag)), "n1")
    try:
        assert set(worker.handlers) == {"mb_call"}       # every request: protocol.py's
        info = ask(P.Info(), signed=False)
        assert isinstance(info, P.NodeInfo) and (info.node, info.slots) == ("n1", 1)
        # a cpu that cannot run the build says so at Info (the coordinator asks no more)
        from manybench import build_isa
        assert info.refused == build_isa.refusal()
        monkeypatch.setattr(build_isa, "refusal", lambda: "this cpu cannot run ... lacks avx")
        assert ask(P.Info(), signed=False).refused == "this cpu cannot run ... lacks avx"
        assert isinstance(ask(P.MeasureNoise(0.02)), P.NoiseFloor)
        plugin.run, plugin.call_key = "r1", key           # a run holds the node
        plugin.lease.renew()
        refused = ask(P.Renew(60.0), signed=False)        # not signed with its secret
        assert isinstance(refused, P.Failed) and "does not carry its secret" in refused.error
        assert plugin.lease.length != 60.0
        assert ask(P.Renew(60.0)) is None and plugin.lease.length == 60.0
        # another run's Start, signed with its own secret, waits for this run's lease (here
        # a short one) and is refused while the run holds the node; Abort unsigned likewise
        plugin.lease.length = 0.3
        start = P.Start("r2", "n1", 1, "/tmp", secret="another")
        data = P.encode(start)
        busy = P.decode(asyncio.run(call(kind="Start", request=data, tag=auth.tag(
            auth.derive("another", "call"), b"Start", data))), "n1")
        assert isinstance(busy, P.Failed) and "another coordinator's run (r1)" in busy.error
        assert isinstance(ask(P.Abort(), signed=False), P.Failed) and plugin.run == "r1"
        # a coordinator of another version: refused unread, in our envelope
        other = P.MAGIC + (V + 1).to_bytes(2, "big") + b"junk"
        refused = P.decode(asyncio.run(call(kind="Start", request=other)), "n1")
        assert isinstance(refused, P.Failed) and refused.error.startswith(
            f"the coordinator speaks manybench protocol version {V + 1}; this side speaks "
            f"version {V}")
    finally:
        plugin.teardown(worker)


def test_the_coordinator_stores_what_the_engine_found_ending_the_run(tmp_path):
    """A node that did not confirm the run's end (Engine.take_warnings) is a stored warning,
    after a finished run and after an interrupted one."""
    from fake_engine import FakeEngine
    from manybench.plan import parse_plan
    from manybench.plan.expand import expand
    from manybench.results.store import Store
    from manybench.run.coordinator import Coordinator
    plan = parse_plan('noise = 0\nrepeat = 2\n[[task]]\nname = "a"\nkernel = "null"\n',
                      "p.toml", ())
    said = ("cleanup", "b", "node b did not confirm the run's end")
    for interrupt_at, status in ((None, "finished"), (1, "interrupted")):
        out = tmp_path / status
        engine = FakeEngine(str(out), interrupt_at, [said])
        res = Coordinator(plan, expand(plan), str(out), engine, [], progress=False).run()
        assert res.status == status
        with Store(str(out), readonly=True) as st:
            got = [(w.kind, w.node, w.message) for w in st.warnings(res.run_id)]
        assert said in got, got
